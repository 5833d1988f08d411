package rig_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// A board the rack says is arm64 whose agent turns out to run as another
// GOARCH (here: a local board, which gets the controller's own build) is
// refused when its hello arrives, naming the board and both architectures,
// instead of being measured as if it were the arm64 build.
func TestAgentOfWrongArchRefused(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == other {
		other = "amd64"
	}
	rack, err := fixtures.ParseRack("arch.yaml", []byte(`name: arch
boards:
  - name: arm
    reach: local
    goarch: `+other+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Agent(ctx, "arm")
	if !errors.Is(err, rig.ErrAgent) || !strings.Contains(err.Error(), "board arm") ||
		!strings.Contains(err.Error(), `GOARCH "`+runtime.GOARCH+`"`) || !strings.Contains(err.Error(), "is "+other) {
		t.Fatalf("agent of the wrong arch: %v", err)
	}
}
