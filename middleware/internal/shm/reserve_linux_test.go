package shm_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// smallTmpfs mounts a 1 MiB tmpfs on a fresh directory (needs root),
// with extra mount options opts (e.g. ",huge=advise"), and unmounts it
// when the test ends.
func smallTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 1 MiB tmpfs (mount -t tmpfs -o size=1m)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"+opts); err != nil {
		t.Skipf("cannot mount a 1 MiB tmpfs on %s (no CAP_SYS_ADMIN in this container?): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// runChild re-executes the test binary as role and fails the test if the
// child dies of a signal: a SIGBUS from an unreserved tmpfs page must fail
// the test, not kill it. It returns the child's output.
func runChild(t *testing.T, role string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReserveHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"SHM_HELPER=" + role}, env...)...)
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("child %s killed by %v (SIGBUS = a store to an unreserved tmpfs page):\n%s", role, ws.Signal(), out)
	}
	if strings.Contains(string(out), "signal SIGBUS") {
		t.Fatalf("child %s died of SIGBUS (a store to an unreserved tmpfs page):\n%s", role, out)
	}
	if err != nil {
		t.Fatalf("child %s: %v\n%s", role, err, out)
	}
	return string(out)
}

func TestReserveHelper(t *testing.T) {
	role := os.Getenv("SHM_HELPER")
	if role == "" {
		t.Skip("helper process for the tmpfs reservation tests")
	}
	var err error
	switch role {
	case "lazy":
		err = lazyReservation(os.Getenv("SHM_DIR"))
	case "create":
		err = createTooBig(os.Getenv("SHM_DIR"))
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("PASS")
	os.Exit(0)
}

// lazyReservation: a ring whose working set fits a 1 MiB tmpfs but whose
// pool does not. Sixteen readers each hold one message, so the writer
// walks into pool slots beyond the working set; the first slot the
// filesystem cannot hold makes Acquire fail with ErrNoSpace (no SIGBUS),
// and once the readers let go publishing works again on reserved slots.
func lazyReservation(dir string) error {
	// Slot = 100 KiB + 64 B header, 4 KiB aligned = 26 pages. Header 1
	// page + working set (1+2 slots) = 79 pages; 6 more slots fit in 256
	// pages, the 7th (slot 9) does not.
	p := shm.Params{Topic: "lazy", TopicID: 1, MaxPayload: 100 << 10, RingLen: 1}
	g := p.Geometry()
	if g.SlotSize != 26*4096 || g.SlotsOff != 4096 || g.WorkSlots != 3 {
		return fmt.Errorf("geometry changed, recompute the test: %+v", g)
	}
	const firstUnfit = 9
	path := filepath.Join(dir, shm.FileName("t", "lazy"))
	seg, err := shm.Open(path, p, shm.OpenOptions{Mode: 0o600, Gid: -1, PID: os.Getpid(), HugePages: os.Getenv("SHM_HUGE") != ""})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer seg.Close()
	if huge := os.Getenv("SHM_HUGE") != ""; huge != seg.HugeAdvised {
		return fmt.Errorf("huge pages asked %v, advised %v", huge, seg.HugeAdvised)
	}
	w, err := shm.NewWriter(seg.Region, os.Getpid())
	if err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	defer w.Close()
	if err := w.ReserveAll(); !errors.Is(err, shm.ErrNoSpace) || !strings.Contains(err.Error(), path) {
		return fmt.Errorf("ReserveAll of 18 slots on 1 MiB: got %v, want ErrNoSpace naming %s", err, path)
	}
	var readers []*shm.Reader
	for i := 0; i < shm.MaxSubscribers; i++ {
		rd, err := shm.NewReader(seg.Region, os.Getpid(), fmt.Sprint("r", i), 1, 0)
		if err != nil {
			return err
		}
		defer rd.Close()
		readers = append(readers, rd)
	}
	var f shm.Frame
	published := 0
	var noSpace error
	for i := 0; i < shm.MaxSubscribers; i++ {
		b, err := w.Acquire(0, func() int64 { return 0 })
		if err != nil {
			noSpace = err
			break
		}
		fill(b, uint64(i+1))
		w.Commit(len(b), shm.Meta{})
		published++
		// Reader i holds message i+1 (its callback is "still running").
		// The others skip ahead on their next TryNext.
		if ok, err := readers[i].TryNext(&f); !ok || err != nil {
			return fmt.Errorf("reader %d: no message %d (%v)", i, i+1, err)
		}
		if tag, ok := intact(f.Payload); !ok || tag != uint64(i+1) {
			return fmt.Errorf("reader %d: message %d tag %d intact %v", i, i+1, tag, ok)
		}
	}
	if published != firstUnfit || !errors.Is(noSpace, shm.ErrNoSpace) {
		return fmt.Errorf("published %d then %v; want %d then ErrNoSpace", published, noSpace, firstUnfit)
	}
	for _, want := range []string{path, "pool slot 9", "free of", "--shm-size="} {
		if !strings.Contains(noSpace.Error(), want) {
			return fmt.Errorf("error %q does not say %q", noSpace, want)
		}
	}
	fmt.Println("nospace:", noSpace)
	for _, rd := range readers[:published] {
		if err := rd.Release(); err != nil {
			return err
		}
	}
	// The held slots are free again: publishing resumes on reserved ones.
	for i := 0; i < 5; i++ {
		b, err := w.Acquire(0, func() int64 { return 0 })
		if err != nil {
			return fmt.Errorf("publish after release %d: %w", i, err)
		}
		fill(b, 100+uint64(i))
		w.Commit(len(b), shm.Meta{})
		if ok, err := readers[0].TryNext(&f); !ok || err != nil {
			return fmt.Errorf("after release: nothing to read (%v)", err)
		}
		if tag, ok := intact(f.Payload); !ok || tag != 100+uint64(i) {
			return fmt.Errorf("after release: tag %d intact %v", tag, ok)
		}
		if err := readers[0].Release(); err != nil {
			return err
		}
	}
	return nil
}

func createTooBig(dir string) error {
	p := shm.Params{Topic: "big", TopicID: 2, MaxPayload: 512 << 10, RingLen: 1}
	path := filepath.Join(dir, shm.FileName("t", "big"))
	seg, err := shm.Open(path, p, shm.OpenOptions{Mode: 0o600, Gid: -1, PID: os.Getpid(), HugePages: os.Getenv("SHM_HUGE") != ""})
	if err == nil {
		seg.Close()
		return fmt.Errorf("opened a %d-byte working set on a 1 MiB tmpfs", p.Geometry().SlotsOff+3*p.Geometry().SlotSize)
	}
	if !errors.Is(err, shm.ErrNoSpace) {
		return fmt.Errorf("got %v, want ErrNoSpace", err)
	}
	for _, want := range []string{path, "working set of 3 slots", "free of 1.0 MiB", "--shm-size="} {
		if !strings.Contains(err.Error(), want) {
			return fmt.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
		return fmt.Errorf("failed create left %s behind (%v)", path, serr)
	}
	fmt.Println("nospace:", err)
	return nil
}

// spaceCases run the reservation tests with 4 KiB pages, and with huge
// pages on a huge=advise tmpfs, where reserving first faults the pages
// in through the mapping (MADV_POPULATE_WRITE): a full filesystem must
// still be ErrNoSpace, not SIGBUS.
var spaceCases = []struct{ name, mount, env string }{
	{"4KiB", "", "SHM_HUGE="},
	{"huge=advise", ",huge=advise", "SHM_HUGE=1"},
}

// eachSpaceCase runs the child test mode on a small tmpfs of each space
// case, wants it to pass, and then runs after on the tmpfs directory.
func eachSpaceCase(t *testing.T, mode string, after func(t *testing.T, dir string)) {
	for _, c := range spaceCases {
		t.Run(c.name, func(t *testing.T) {
			dir := smallTmpfs(t, c.mount)
			out := runChild(t, mode, "SHM_DIR="+dir, c.env)
			if !strings.Contains(out, "PASS") {
				t.Fatalf("child:\n%s", out)
			}
			t.Log(out)
			after(t, dir)
		})
	}
}

func TestLazySlotReservationOnSmallTmpfs(t *testing.T) {
	eachSpaceCase(t, "lazy", func(t *testing.T, dir string) {
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
			t.Errorf("segments left in %s: %v", dir, left)
		}
	})
}

// A segment too big for the filesystem fails at creation with ErrNoSpace
// naming the file, the bytes and the free space, and leaves no file.
func TestCreateOnSmallTmpfs(t *testing.T) {
	eachSpaceCase(t, "create", func(*testing.T, string) {})
}
