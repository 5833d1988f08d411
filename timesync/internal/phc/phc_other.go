//go:build !linux

package phc

import (
	"errors"
	"fmt"
	"os"
)

// errNotLinux is what every function here returns off Linux: PTP hardware
// clocks are Linux devices (/dev/ptpN, PTP_SYS_OFFSET ioctls, ethtool).
// It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("timesync: PTP hardware clocks need Linux (/dev/ptpN ioctls): %w", errors.ErrUnsupported)

// Device fails off Linux with an error matching errors.ErrUnsupported.
func Device(iface string) (string, error) {
	return "", fmt.Errorf("interface %s: %w", iface, errNotLinux)
}

// SysOffset fails off Linux with an error matching errors.ErrUnsupported.
func SysOffset(dev string) (Offset, error) {
	return Offset{}, fmt.Errorf("read PHC %s: %w", dev, errNotLinux)
}

// Open fails off Linux with an error matching errors.ErrUnsupported.
func Open(dev string) (*os.File, int32, error) {
	return nil, 0, fmt.Errorf("open PHC %s: %w", dev, errNotLinux)
}
