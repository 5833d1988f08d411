package power_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig/power"
)

// TestCommandTimeoutKillsGroup: a command driver's timeout ends the
// command's whole process group and the operation returns within
// timeout + 1 s. A command that outlives the timeout, and one whose
// background child keeps the output open after the shell exited 0, both
// used to hold the operation for the 40 s they slept (the second then
// reported "on"). Now both fail as time-outs and the background sleep is
// gone.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	const timeout = time.Second
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	for _, c := range []struct {
		name string
		argv string // a YAML flow list
		op   func(*power.Switch, context.Context) (power.State, error)
	}{
		{"on: sleeps past the timeout", `[sh, -c, "sleep 40; exit 0"]`, func(s *power.Switch, ctx context.Context) (power.State, error) {
			return power.Unknown, s.On(ctx)
		}},
		{"status: background child holds the output", `[sh, -c, "(sleep 40 & echo $! > ` + pidFile + `)"]`, (*power.Switch).Status},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := switchFor(t, fmt.Sprintf("{driver: command, on: %s, off: [true], status: %s, timeout: %v}", c.argv, c.argv, timeout))
			begin := time.Now()
			st, err := c.op(s, context.Background())
			took := time.Since(begin)
			t.Logf("after %v: %v, %v", took.Round(time.Millisecond), st, err)
			if !errors.Is(err, power.ErrPower) || !errors.Is(err, context.DeadlineExceeded) || st == power.On {
				t.Errorf("got %v, %v; want a time-out error wrapping ErrPower and context.DeadlineExceeded, never on", st, err)
			}
			if took > timeout+time.Second {
				t.Errorf("took %v, want within the timeout %v + 1 s", took, timeout)
			}
		})
	}
	// The background sleep was in the command's process group: killed.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the background sleep "+strconv.Itoa(pid)+" to be gone", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}

// TestCommandOutputBounded: a command printing hundreds of MB costs no
// more memory than its kept tail (the whole output used to be buffered:
// 3 GB crashed the controller out of memory), and its error shows the end
// of the output.
func TestCommandOutputBounded(t *testing.T) {
	const size = 256 << 20
	s := switchFor(t, fmt.Sprintf(`{driver: command, on: [sh, -c, "head -c %d /dev/zero; echo; echo relay jammed; exit 3"], off: [true], timeout: 2m}`, size))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := s.On(context.Background())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "exited 3") || !strings.Contains(err.Error(), "relay jammed") {
		t.Errorf("On = %v, want exit 3 with the end of the output", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("running a command that printed %d MiB allocated %d MiB, want under 16 MiB", size>>20, alloc>>20)
	}
}

// TestPasswordFileBounded: password_file is read as a secret: a regular
// file, at most 4 KiB, not readable by others. /dev/zero is refused by the
// rack loader (it used to be accepted, and reading it crashed the
// controller out of memory in a second); a file replaced after loading by a
// FIFO, a device or an oversized file is refused by power.New without
// blocking or reading it whole.
func TestPasswordFileBounded(t *testing.T) {
	rack := func(pw string) string {
		return "name: p\nboards:\n  - name: dut\n    reach: local\n    power: {driver: http, protocol: netio, url: \"http://127.0.0.1:1\", outlet: 1, user: admin, password_file: " + pw + "}\n"
	}
	_, err := fixtures.ParseRack("pw.yaml", []byte(rack("/dev/zero")))
	var fe *fixtures.Errors
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "password_file") || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("loading a rack with password_file /dev/zero: %v, want an error naming the field and the device", err)
	}

	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	for _, c := range []struct {
		name string
		make func() error
		want error
	}{
		{"fifo", func() error { return syscall.Mkfifo(pw, 0o600) }, safefile.ErrNotRegular},
		{"device", func() error { return os.Symlink("/dev/zero", pw) }, safefile.ErrNotRegular},
		{"over 4 KiB", func() error { return os.WriteFile(pw, make([]byte, 5<<10), 0o600) }, safefile.ErrTooLarge},
		{"readable by others", func() error { return os.WriteFile(pw, []byte("s3cret\n"), 0o644) }, safefile.ErrExposed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := fixtures.ParseRack(filepath.Join(dir, "rack.yaml"), []byte(rack("pw")))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(pw); err != nil {
				t.Fatal(err)
			}
			if err := c.make(); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(pw)
			b, _ := r.Board("dut")
			_, err = power.New(r, b)
			if !errors.Is(err, power.ErrPower) || !errors.Is(err, c.want) || !strings.Contains(err.Error(), "password_file") {
				t.Errorf("New = %v, want ErrPower naming password_file, wrapping %v", err, c.want)
			}
		})
	}
}
