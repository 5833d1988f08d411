package console_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig/console"
	"github.com/hilrig/hilrig/rig/console/consoletest"
)

// TestSerialCaptureThroughPty: the board side writes into a pty master;
// the capture opens the slave as a serial device (termios raw, 115200).
func TestSerialCaptureThroughPty(t *testing.T) {
	p := consoletest.New(t)
	name := p.Device
	p.CloseSlave() // the capture opens it by path, as a serial device
	path := filepath.Join(t.TempDir(), "console-dut.log")
	c, err := console.Open("dut", fixtures.Console{Device: name, Baud: 115200, Parity: "none"}, path)
	if err != nil {
		t.Fatal(err)
	}
	boot := []string{
		"[    0.000000] Linux version 6.6.0",
		"[   12.345678] sysrq: Trigger a crash",
		"[   12.345699] Kernel panic - not syncing: sysrq triggered crash",
		"[   13.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!",
		"[   14.000000] Out of memory: Killed process 123 (hilrig)",
		"[   15.000000] BUG: kernel NULL pointer dereference, address: 0000000000000000",
	}
	for _, l := range boot {
		p.Write(l)
	}
	testkit.Eventually(t, 10*time.Second, "six lines", func() bool { return len(c.Tail(10)) >= len(boot) })
	tail := c.Tail(10)
	for i, l := range tail {
		if l.Text != boot[i] {
			t.Errorf("line %d %q, want %q", i, l.Text, boot[i])
		}
	}
	var kinds []string
	for _, l := range c.Flags() {
		kinds = append(kinds, l.Flag)
	}
	if strings.Join(kinds, ",") != "panic,panic,watchdog,oom,oops" {
		t.Errorf("flags %v", kinds)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	stamp := regexp.MustCompile(`^ *\d+\.\d{6} \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (\[panic\] )?`)
	if len(lines) != len(boot) || !stamp.MatchString(lines[0]) || !strings.Contains(lines[2], "[panic] [   12.345699] Kernel panic") {
		t.Errorf("capture file:\n%s", b)
	}
}

// TestCaptureIsSizeBounded: a console spewing far past max_bytes leaves
// at most max_bytes on disk, with the newest lines and a note.
func TestCaptureIsSizeBounded(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.log")
	c, err := console.Start("dut", r, console.Options{Path: path, MaxBytes: 64 << 10, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10000 {
		fmt.Fprintf(w, "line %05d %s\n", i, strings.Repeat("x", 40))
	}
	w.Close()
	<-c.Done()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > 64<<10 {
		t.Errorf("%d bytes on disk, bound 64 KiB", total)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("line 09999")) || !bytes.HasPrefix(b, []byte("# hilrig: earlier lines are in")) {
		t.Errorf("current file lacks the newest line or the rotation note:\n%.200s", b)
	}
	if tl := c.Tail(3); len(tl) != 3 || !strings.HasPrefix(tl[2].Text, "line 09999") {
		t.Errorf("tail %v", tl)
	}
}

func TestFollow(t *testing.T) {
	r, w, _ := os.Pipe()
	c, err := console.Start("dut", r, console.Options{Path: filepath.Join(t.TempDir(), "c.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	go func() { close(started); done <- c.Follow(ctx, &out) }()
	<-started
	// Follow subscribes before it blocks; lines written until it sees one.
	testkit.Eventually(t, 10*time.Second, "a followed line", func() bool {
		fmt.Fprintln(w, "hello")
		return len(c.Tail(1)) == 1
	})
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
