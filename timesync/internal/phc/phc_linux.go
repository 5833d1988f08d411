package phc

import (
	"fmt"
	"os"
	"strings"

	fbphc "github.com/facebook/time/phc"
)

// Device returns the /dev/ptpN path of iface's PHC. It must run in the
// network namespace that holds iface.
func Device(iface string) (string, error) {
	dev, err := fbphc.IfaceToPHCDevice(iface)
	if err != nil {
		if strings.Contains(err.Error(), "no PHC support") {
			return "", fmt.Errorf("interface %s: %w (ethtool -T reports no PHC index; software timestamping only)", iface, ErrNoPHC)
		}
		return "", fmt.Errorf("interface %s: ethtool timestamping info: %w", iface, err)
	}
	return dev, nil
}

// SysOffset compares the PHC at dev with CLOCK_REALTIME, preferring the
// PTP_SYS_OFFSET_EXTENDED ioctl and falling back to clock_gettime pairs.
// Read-only. Blocks for a few microseconds.
func SysOffset(dev string) (Offset, error) {
	r, err := fbphc.TimeAndOffsetFromDevice(dev, fbphc.MethodIoctlSysOffsetExtended)
	if err != nil {
		r, err = fbphc.TimeAndOffsetFromDevice(dev, fbphc.MethodSyscallClockGettime)
	}
	if err != nil {
		return Offset{}, fmt.Errorf("read PHC %s: %w", dev, err)
	}
	return Offset{Offset: r.Offset, Delay: r.Delay, SysTime: r.SysTime}, nil
}

// Open opens a PHC read-only and returns the file and its dynamic clock id
// for clock_gettime. The caller closes the file.
func Open(dev string) (*os.File, int32, error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, 0, fmt.Errorf("open PHC %s: %w", dev, err)
	}
	return f, fbphc.FromFile(f).ClockID(), nil
}
