package powercli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/power/powercli"
)

func TestPowerCommand(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	rack := filepath.Join(dir, "rack.yaml")
	y := `name: p
boards:
  - name: dut
    reach: local
    power: {driver: command, on: [sh, -c, "echo on > ` + state + `"], off: [sh, -c, "echo off > ` + state + `"], status: [grep, -q, "on", ` + state + `], off_time: 10ms}
  - name: bare
    reach: local
`
	os.WriteFile(rack, []byte(y), 0o644)
	run := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := powercli.Run(context.Background(), args, &out, &errb)
		return out.String(), err
	}
	for _, tc := range []struct{ op, want string }{{"on", "dut: power on (command)"}, {"off", "dut: power off"}, {"cycle", "dut: power on"}, {"status", "dut: power on"}} {
		out, err := run(tc.op, "-rack", rack, "dut")
		if err != nil || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: %q, %v; want %q", tc.op, out, err, tc.want)
		}
	}
	if _, err := run("on", "-rack", rack, "bare"); !errors.Is(err, fixtures.ErrNotFound) || !strings.Contains(err.Error(), "board bare has no power block") {
		t.Errorf("board without power: %v", err)
	}
	if _, err := run("on", "-rack", rack, "ghost"); !errors.Is(err, fixtures.ErrNotFound) {
		t.Errorf("unknown board: %v", err)
	}
	if _, err := run("reboot", "-rack", rack, "dut"); !errors.Is(err, powercli.ErrUsage) {
		t.Errorf("unknown op: %v", err)
	}
}
