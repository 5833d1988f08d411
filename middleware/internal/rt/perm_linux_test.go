package rt

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPermissionErrorsNameTheCapability(t *testing.T) {
	err := permErr("SCHED_FIFO priority 50", "CAP_SYS_NICE", unix.EPERM)
	if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), "needs CAP_SYS_NICE or root") {
		t.Fatalf("EPERM: %v", err)
	}
	err = permErr("pin", "CAP_SYS_NICE", unix.EINVAL)
	if errors.Is(err, ErrPermission) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("EINVAL: %v", err)
	}
}
