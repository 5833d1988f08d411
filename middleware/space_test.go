//go:build linux

package middleware_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/middleware"
)

// smallTmpfs mounts a 1 MiB tmpfs on a fresh directory (needs root) and
// unmounts it when the test ends.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 1 MiB tmpfs (mount -t tmpfs -o size=1m)")
	}
	return mountTmpfs(t, "tmpfs", "size=1m", "a 1 MiB tmpfs (no CAP_SYS_ADMIN in this container?)")
}

// mountTmpfs mounts a tmpfs named source with options on a fresh
// directory and unmounts it when tb ends; it skips tb, naming what it
// tried to mount, where the mount fails.
func mountTmpfs(tb testing.TB, source, options, what string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := unix.Mount(source, dir, "tmpfs", 0, options); err != nil {
		tb.Skipf("cannot mount %s on %s: %v", what, dir, err)
	}
	tb.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// failIfSignalled fails the test if a helper died of a signal or of a
// fault the Go runtime turned into a crash (SIGBUS on a tmpfs page).
func failIfSignalled(t *testing.T, cmd *exec.Cmd, out string) {
	t.Helper()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("helper killed by %v:\n%s", ws.Signal(), out)
	}
	if strings.Contains(out, "signal SIGBUS") {
		t.Fatalf("helper died of SIGBUS (a store to a tmpfs page that was never reserved):\n%s", out)
	}
}

// On a filesystem too small for a contract (Docker's 64 MB /dev/shm, here
// a 1 MiB tmpfs), opening the topic fails with ErrNoSpace naming the file,
// the bytes and the free space: no SIGBUS at the first write. A contract
// whose working set fits still works. Runs in a child process so that a
// SIGBUS fails the test instead of killing it.
func TestShmFilesystemTooSmall(t *testing.T) {
	dir := smallTmpfs(t)
	d := testDomain(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=smallshm", "HILRIG_DOMAIN="+d, "HILRIG_SHMDIR="+dir)
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	failIfSignalled(t, cmd, out)
	if err != nil || !strings.Contains(out, "PASS") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Log(out)
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("files left in %s: %v", dir, left)
	}
}

func smallShmChild(dir, domain string) error {
	open := func(all bool) (*middleware.Node, error) {
		return middleware.OpenNode("small", &middleware.NodeOptions{Domain: domain, ShmDir: dir, ShmReserveAll: all})
	}
	n, err := open(false)
	if err != nil {
		return err
	}
	defer n.Close()
	wantNoSpace := func(what string, err error, path string, says ...string) error {
		if !errors.Is(err, middleware.ErrNoSpace) {
			return fmt.Errorf("%s: got %v, want ErrNoSpace", what, err)
		}
		for _, s := range append([]string{path, "free of 1.0 MiB", "--shm-size="}, says...) {
			if !strings.Contains(err.Error(), s) {
				return fmt.Errorf("%s: error %q does not say %q", what, err, s)
			}
		}
		if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("%s: %s left behind (%v)", what, path, serr)
		}
		fmt.Printf("%s: %v\n", what, err)
		return nil
	}
	// 256 KiB frames: the working set (3+2 slots) is 1.3 MiB.
	big := middleware.Contract{Topic: "cam", MaxPayload: 256 << 10, Slots: 3, Transport: middleware.TransportShm}
	path := middleware.SegmentPath(dir, domain, big.Topic)
	_, err = n.NewPublisher(big, nil)
	if err := wantNoSpace("publisher", err, path, "working set of 5 slots"); err != nil {
		return err
	}
	_, err = n.NewSubscriber(big, nil)
	if err := wantNoSpace("subscriber", err, path); err != nil {
		return err
	}
	// 64 KiB frames, 3 slots: the working set (5 slots of 68 KiB) fits,
	// the whole pool (20 slots, 1.3 MiB) does not.
	small := middleware.Contract{Topic: "imu", MaxPayload: 64 << 10, Transport: middleware.TransportShm}
	all, err := open(true)
	if err != nil {
		return err
	}
	defer all.Close()
	_, err = all.NewPublisher(small, nil)
	if err := wantNoSpace("ShmReserveAll publisher", err, middleware.SegmentPath(dir, domain, small.Topic), "all 20 slots"); err != nil {
		return err
	}
	sub, err := n.NewSubscriber(small, nil)
	if err != nil {
		return fmt.Errorf("working set that fits: subscriber: %w", err)
	}
	pub, err := n.NewPublisher(small, nil)
	if err != nil {
		return fmt.Errorf("working set that fits: publisher: %w", err)
	}
	frame := make([]byte, small.MaxPayload)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := uint64(1); i <= 20; i++ {
		if i%2 == 0 {
			fillPattern(frame, i)
			if err := pub.Send(frame); err != nil {
				return fmt.Errorf("send %d: %w", i, err)
			}
		} else {
			l, err := pub.Loan()
			if err != nil {
				return fmt.Errorf("loan %d: %w", i, err)
			}
			fillPattern(l.Bytes(), i)
			if err := l.Publish(len(l.Bytes())); err != nil {
				return fmt.Errorf("publish %d: %w", i, err)
			}
		}
		var bad error
		if err := sub.Next(ctx, func(m *middleware.Message) {
			if tag, ok := checkPattern(m.Payload); !ok || tag != i {
				bad = fmt.Errorf("message %d: tag %d intact %v", i, tag, ok)
			}
		}); err != nil {
			return err
		}
		if bad != nil {
			return bad
		}
	}
	fmt.Println("20 frames of 64 KiB through a 1 MiB tmpfs")
	fmt.Println("PASS")
	return nil
}

// A segment file shortened by another process after it was created is
// rejected with ErrBadSegment naming the file: by a process attaching to
// it (fast: a valid header over a short file is never a creation in
// progress), by a process that already has it mapped and opens another
// end (fstat at every open), and by `hilrig shm ls`.
func TestSegmentTruncatedAfterCreation(t *testing.T) {
	// MaxPayload 4096, 4 slots: slots at 4096, 4160 bytes each. Keep the
	// header and one slot, so the publisher's own teardown (header words
	// only) stays inside the file.
	const keep = 4096 + 4160
	c := middleware.Contract{Topic: "shrunk", MaxPayload: 4096, Slots: 4, Transport: middleware.TransportShm}
	shrink := func(t *testing.T, path string) {
		if out, err := exec.Command("truncate", "-s", fmt.Sprint(keep), path).CombinedOutput(); err != nil {
			t.Fatalf("truncate: %v %s", err, out)
		}
	}

	t.Run("attach from another process", func(t *testing.T) {
		d := testDomain(t)
		n := openNode(t, "attacher", d)
		path := middleware.SegmentPath("", d, c.Topic)
		cmd, out := helperCmd(t, "pubhold", helperEnvFor(d, c, 0)...)
		expectLine(t, out, "ready")
		shrink(t, path)
		start := time.Now()
		_, err := n.NewSubscriber(c, nil)
		if !errors.Is(err, middleware.ErrBadSegment) || !strings.Contains(err.Error(), path) ||
			!strings.Contains(err.Error(), fmt.Sprintf("truncated: file has %d bytes", keep)) {
			t.Fatalf("got %v\nwant ErrBadSegment naming %s, saying it was truncated", err, path)
		}
		if el := time.Since(start); el > 900*time.Millisecond { // waiting for a creator takes ≥ InitWait (1 s); a loaded host may stall us for less
			t.Errorf("rejecting a truncated segment took %v (waited for a creator)", el)
		}
		t.Log(err)
		segs, err := middleware.ListSegments("")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range segs {
			if s.Path == path {
				found = true
				if !errors.Is(s.Err, middleware.ErrBadSegment) || !s.InUse {
					t.Errorf("shm ls of the truncated segment: in use %v, err %v", s.InUse, s.Err)
				}
			}
		}
		if !found {
			t.Errorf("shm ls does not list %s", path)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if ok, err := middleware.RemoveSegment(path); !ok || err != nil {
			t.Errorf("remove %s after the publisher died: %v %v", path, ok, err)
		}
	})

	t.Run("already mapped here", func(t *testing.T) {
		d := testDomain(t)
		path := middleware.SegmentPath("", d, c.Topic)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), append([]string{helperEnv + "=shrinkself"}, helperEnvFor(d, c, 0)...)...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var outb strings.Builder
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = &outb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		r := bufio.NewReader(stdout)
		expectLine(t, r, "ready")
		shrink(t, path)
		fmt.Fprintln(stdin, "go")
		rest, _ := readAll(r)
		werr := cmd.Wait()
		all := rest + outb.String()
		failIfSignalled(t, cmd, all)
		if werr != nil || !strings.Contains(rest, "PASS") {
			t.Fatalf("helper: %v\n%s", werr, all)
		}
		t.Log(rest)
	})
}

func readAll(r *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := r.WriteTo(&b)
	return b.String(), err
}

// shrinkSelfChild publishes, waits for the parent to shorten the segment,
// then opens a subscriber on the same (already mapped) topic.
func shrinkSelfChild(n *middleware.Node, c middleware.Contract) error {
	pub, err := n.NewPublisher(c, nil)
	if err != nil {
		return err
	}
	if err := pub.Send([]byte("before")); err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	path := middleware.SegmentPath("", n.Domain(), c.Topic)
	_, err = n.NewSubscriber(c, nil)
	if !errors.Is(err, middleware.ErrBadSegment) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "shrank to 8256 bytes") {
		return fmt.Errorf("subscriber on a mapping whose file shrank: got %v, want ErrBadSegment naming %s", err, path)
	}
	fmt.Println("subscriber:", err)
	fmt.Println("PASS")
	return nil
}
