package powercli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/power"
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

// fakeQMP serves QMP on sock for a stand-in QEMU process proc (a real
// child of the test): quit and system_reset end proc, as they end QEMU
// under -no-reboot; query-status answers running. It records commands.
func fakeQMP(t *testing.T, sock string, proc *exec.Cmd) *[]string {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	cmds := []string{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintln(c, `{"QMP":{"version":{},"capabilities":[]}}`)
				dec := json.NewDecoder(c)
				for {
					var m struct {
						Execute string `json:"execute"`
					}
					if dec.Decode(&m) != nil {
						return
					}
					mu.Lock()
					cmds = append(cmds, m.Execute)
					mu.Unlock()
					switch m.Execute {
					case "query-status":
						fmt.Fprintln(c, `{"return":{"status":"running","running":true}}`)
					case "quit", "system_reset":
						fmt.Fprintln(c, `{"return":{}}`)
						_ = proc.Process.Kill()
					default:
						fmt.Fprintln(c, `{"return":{}}`)
					}
				}
			}()
		}
	}()
	return &cmds
}

// TestPowerVMPublishedBoard: hilrig power drives a vm board's QEMU
// process that a rig published (power.Publish): status reads it back
// over QMP, off is QMP quit and waits for the process to end, status is
// then off, and on says that only the rig running the board boots it.
func TestPowerVMPublishedBoard(t *testing.T) {
	dir := t.TempDir()
	rackName := fmt.Sprintf("vmpub%d", os.Getpid())
	rack := filepath.Join(dir, "rack.yaml")
	os.WriteFile(rack, []byte("name: "+rackName+"\nboards:\n  - name: vm-a\n    reach: vm\n    vm: {segment: s, ip: 10.233.9.1/24}\n    power: {driver: vm, timeout: 8s}\n"), 0o644)
	proc := exec.Command("sleep", "300") // stands in for QEMU
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = proc.Wait(); close(reaped) }() // the rig reaps its QEMU
	t.Cleanup(func() { _ = proc.Process.Kill(); <-reaped })
	sock := filepath.Join(dir, "qmp.sock")
	cmds := fakeQMP(t, sock, proc)
	unpublish, err := power.Publish(rackName, "vm-a", power.Published{Socket: sock, PID: proc.Process.Pid, RigPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpublish(); os.Remove(filepath.Dir(power.PublishedPath(rackName, "vm-a"))) })
	run := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := powercli.Run(context.Background(), args, &out, &errb)
		return out.String(), err
	}
	if out, err := run("status", "-rack", rack, "vm-a"); err != nil || !strings.Contains(out, "vm-a: power on (vm)") {
		t.Fatalf("status: %q, %v; want on", out, err)
	}
	if out, err := run("off", "-rack", rack, "vm-a"); err != nil || !strings.Contains(out, "vm-a: power off (vm)") {
		t.Fatalf("off: %q, %v; want off", out, err)
	}
	// Off returned once the process ended (a zombie until its parent,
	// here the test as the rig, reaps it).
	select {
	case <-reaped:
	case <-time.After(5 * time.Second):
		t.Error("the QEMU process still runs after off")
	}
	if !slices.Contains(*cmds, "quit") {
		t.Errorf("QMP commands %v: want quit", *cmds)
	}
	if _, err := run("on", "-rack", rack, "vm-a"); !errors.Is(err, power.ErrNotOwner) {
		t.Errorf("on of a stopped published board: %v, want ErrNotOwner", err)
	}
}
