// Package serial opens a serial device raw (termios, no modem control) at
// a standard baud rate and parity. Linux only; the stub elsewhere returns
// errors matching errors.ErrUnsupported.
package serial

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

var bauds = map[int]uint32{
	1200: unix.B1200, 2400: unix.B2400, 4800: unix.B4800, 9600: unix.B9600, 19200: unix.B19200,
	38400: unix.B38400, 57600: unix.B57600, 115200: unix.B115200, 230400: unix.B230400,
	460800: unix.B460800, 921600: unix.B921600, 1500000: unix.B1500000, 3000000: unix.B3000000,
}

// Open opens path for reading and writing, raw 8 data bits, 1 stop bit,
// at baud with parity "none" (or ""), "even" or "odd". Reads block until
// data arrives (close the file to end them).
func Open(path string, baud int, parity string) (*os.File, error) {
	speed, ok := bauds[baud]
	if !ok {
		return nil, fmt.Errorf("serial %s: unsupported baud rate %d", path, baud)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("serial %s: %w", path, err)
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("serial %s: not a terminal device: %w", path, err)
	}
	// cfmakeraw
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.PARODD | unix.CSTOPB | unix.CBAUD
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL | speed
	t.Ispeed, t.Ospeed = speed, speed
	switch parity {
	case "", "none":
	case "even":
		t.Cflag |= unix.PARENB
	case "odd":
		t.Cflag |= unix.PARENB | unix.PARODD
	default:
		unix.Close(fd)
		return nil, fmt.Errorf("serial %s: parity %q: want none, even or odd", path, parity)
	}
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("serial %s: set termios: %w", path, err)
	}
	// Non-blocking, so os.NewFile puts it in the runtime poller: reads
	// park the goroutine, and Close ends a read in progress.
	return os.NewFile(uintptr(fd), path), nil
}
