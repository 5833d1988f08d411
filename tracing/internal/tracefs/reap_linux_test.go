package tracefs

import (
	"os"
	"testing"
	"time"
)

func TestOwnerPID(t *testing.T) {
	for name, want := range map[string]int{"hilrig-123-4": 123, "hilrig-1-1": 1} {
		if pid, ok := ownerPID(name, "hilrig-"); !ok || pid != want {
			t.Errorf("ownerPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
	for _, name := range []string{"other-123-4", "hilrig-", "hilrig-123", "hilrig-x-1", "hilrig-0-1", "hilrig--5-1", "hilrig-12-x"} {
		if pid, ok := ownerPID(name, "hilrig-"); ok {
			t.Errorf("ownerPID(%q) = %d, true; want not an instance of ours", name, pid)
		}
	}
}

// A live pid owns an instance made after it started; the same pid does
// not own one made long before it started (the pid was reused).
func TestOwnerAliveSeesPidReuse(t *testing.T) {
	self := os.Getpid()
	if !ownerAlive(self, time.Now()) {
		t.Errorf("this process does not own an instance made now")
	}
	if ownerAlive(self, time.Now().Add(-time.Hour)) {
		t.Errorf("this process (started seconds ago) owns an instance made an hour ago")
	}
	// The start time itself: internal/procstat's TestStartTimeOfThisProcess.
}
