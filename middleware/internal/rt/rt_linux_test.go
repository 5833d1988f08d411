package rt_test

import (
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/rt"
)

func TestSetThreadPinsAndRestores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st, err := rt.SetThread(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Restore()
	if _, err := rt.SetThread(0, 100); err == nil {
		t.Fatal("priority 100 accepted")
	}
	if _, err := rt.SetThread(4096, 0); err == nil {
		t.Fatal("CPU 4096 accepted")
	}
}
