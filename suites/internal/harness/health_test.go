package harness_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// TestCheckHealth: the health gate passes on a working sim rack, names
// the board running another build, and fails (not skips) a rack whose
// claimed scope does not answer.
func TestCheckHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hilrig and starts agents")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := rig.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := harness.CheckHealth(ctx, r, bin); err != nil {
		t.Fatalf("CheckHealth on a healthy sim rack: %v", err)
	}
	boards, err := harness.CheckBoards(ctx, r, "hilrig v0.0.0-other")
	if !errors.Is(err, harness.ErrHealth) || len(boards) != len(rack.Boards) {
		t.Fatalf("CheckBoards with another build = %d boards, %v; want ErrHealth", len(boards), err)
	}
	for _, b := range rack.Boards {
		if !strings.Contains(err.Error(), "board "+b.Name) {
			t.Errorf("error does not name board %s: %v", b.Name, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	broken, err := fixtures.ParseRack("broken.yaml", []byte(`name: broken
capabilities: [scope]
boards:
  - {name: a, reach: local, markers: [{name: tx, chip: "sim:brkh", offset: 0}]}
instruments:
  scope: {driver: scpi, address: "`+addr+`", channels: 2, wiring: [{channel: 1, board: a, marker: tx}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := rig.Open(ctx, broken, &rig.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	err = harness.CheckHealth(ctx, rb, bin)
	if !errors.Is(err, harness.ErrHealth) || !errors.Is(err, rig.ErrClaimBroken) || !strings.Contains(err.Error(), "scope") {
		t.Errorf("CheckHealth on a rack with a dead scope = %v, want ErrHealth and ErrClaimBroken naming the scope", err)
	}
}
