package gpiotest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// envLeave makes this test binary, re-executed, create chips in the
// directory it names and exit without removing them: a killed test run.
const envLeave = "HLR_GPIOTEST_LEAVE"

// TestNewSimRemovesChipsOfGoneTests: the first NewSim in a chip directory
// removes the chips a test binary that is gone left there under SimLabel,
// and keeps chips of other labels (made to outlive their creator).
func TestNewSimRemovesChipsOfGoneTests(t *testing.T) {
	if dir := os.Getenv(envLeave); dir != "" {
		for name, label := range map[string]string{"left": gpiotest.SimLabel, "byhand": "hilrig-gpiosim"} {
			if _, err := gpiosim.Create(name, gpiosim.Config{Dir: dir, Lines: 1, RingSize: 2, Label: label}); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestNewSimRemovesChipsOfGoneTests$")
	child.Env = append(os.Environ(), envLeave+"="+dir)
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, gpiosim.FilePrefix+name))
		return err == nil
	}
	if !exists("left") || !exists("byhand") {
		t.Fatal("the child's chips are not there")
	}
	s := gpiotest.NewSim(t, gpiosim.Config{Dir: dir})
	if exists("left") {
		t.Error("the chip of the exited test binary is still there after NewSim")
	}
	if !exists("byhand") {
		t.Error("a chip of another label was removed")
	}
	if !exists(s.C.Name()) {
		t.Error("NewSim's own chip is missing")
	}
}
