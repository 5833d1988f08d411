package rt

import (
	"runtime"
	"testing"
)

func TestHoldPLeavesOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if n := Held(); n != 0 {
		t.Fatalf("%d Ps held before the test", n)
	}
	if first, second := HoldP(), HoldP(); !first || !second {
		t.Fatal("GOMAXPROCS 3: the first two dedicated waits must hold a P")
	}
	if HoldP() {
		t.Error("GOMAXPROCS 3: a third dedicated wait held the last P")
	}
	ReleaseP()
	if !HoldP() {
		t.Error("a P released was not reusable")
	}
	ReleaseP()
	ReleaseP()
	runtime.GOMAXPROCS(1)
	if HoldP() {
		ReleaseP()
		t.Error("GOMAXPROCS 1: a dedicated wait held the only P")
	}
}
