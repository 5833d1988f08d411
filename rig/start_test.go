package rig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// TestAgentStartRefusesBadFirstLine: an agent whose first line is not a
// hello this controller speaks (a hello of protocol version 2; a banner
// printed by a wrapper before a real agent) fails the start within
// StartTimeout, with an error naming the board and quoting the line. Both
// fake agents keep running after that line, as a real agent waiting for
// the controller's hello does: the start used to wait for the process to
// end (40–60 s), whatever StartTimeout said.
func TestAgentStartRefusesBadFirstLine(t *testing.T) {
	const startTimeout = 2 * time.Second
	for _, c := range []struct {
		name, script, line string
	}{
		{"hello of version 2",
			`echo '{"v":2,"kind":"hello","hello":{"version":2,"agent":"hilrig v9"}}'; exec sleep 30`,
			`"{\"v\":2,\"kind\":\"hello\"`},
		{"banner before a real agent",
			`echo 'Welcome to board b1'; exec ` + hilrigBin + ` "$@"`,
			`"Welcome to board b1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "agent.sh")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			rack, err := fixtures.ParseRack("start.yaml", []byte("name: start\nboards:\n  - {name: b1, reach: local}\n"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := rig.Open(ctx, rack, &rig.Options{Binary: bin, StartTimeout: startTimeout})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			begin := time.Now()
			_, err = r.Agent(ctx, "b1")
			took := time.Since(begin)
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
			if !errors.Is(err, rig.ErrAgent) || !strings.Contains(err.Error(), "board b1") || !strings.Contains(err.Error(), c.line) {
				t.Errorf("Agent = %v, want ErrAgent naming board b1 and the line %s", err, c.line)
			}
			// The margin is for starting a process on a loaded machine, not
			// for waiting on it.
			if took > startTimeout+time.Second {
				t.Errorf("Agent took %v, want within StartTimeout %v (+1 s)", took, startTimeout)
			}
		})
	}
}
