package tracefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/procstat"
)

// Candidate mount points, standard one first.
var roots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// Root returns the tracefs mount point, mounting tracefs on
// /sys/kernel/tracing when it is not mounted anywhere (needs CAP_SYS_ADMIN).
func Root() (string, error) {
	for _, r := range roots {
		if _, err := os.Stat(filepath.Join(r, "instances")); err == nil {
			return r, nil
		}
	}
	if err := unix.Mount("nodev", roots[0], "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("tracefs not mounted and mount on %s failed: %w", roots[0], err)
	}
	if _, err := os.Stat(filepath.Join(roots[0], "instances")); err != nil {
		return "", fmt.Errorf("tracefs mounted on %s but has no instances/: %w", roots[0], err)
	}
	return roots[0], nil
}

// Instance is one private trace instance. Mark may be called from any
// goroutine; the other methods are not safe for concurrent use.
type Instance struct {
	dir    string
	marker *os.File
	// Reaped names the stale instances Open removed (Options.ReapPrefix).
	Reaped []string
}

// Open creates and arms an instance: clock "mono" (CLOCK_MONOTONIC, so
// trace timestamps compare with the middleware's stamps), the buffer size,
// the CPU mask and Events, then turns it on.
func Open(o Options) (*Instance, error) {
	if o.Name == "" || strings.ContainsAny(o.Name, "/.") {
		return nil, fmt.Errorf("tracefs instance name %q: must be non-empty without '/' or '.'", o.Name)
	}
	if o.BufferKB <= 0 {
		return nil, fmt.Errorf("tracefs instance %s: buffer size %d KiB must be positive", o.Name, o.BufferKB)
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	var reaped []string
	if o.ReapPrefix != "" {
		// Best effort: what cannot be removed is left for the next Open.
		reaped, _ = ReapStale(root, o.ReapPrefix)
	}
	dir := filepath.Join(root, "instances", o.Name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create trace instance: %w", err)
	}
	in := &Instance{dir: dir, Reaped: reaped}
	if err := in.setup(o); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

func (in *Instance) setup(o Options) error {
	if err := in.write("tracing_on", "0"); err != nil {
		return err
	}
	if err := in.write("trace_clock", "mono"); err != nil {
		return err
	}
	if err := in.write("buffer_size_kb", strconv.Itoa(o.BufferKB)); err != nil {
		return err
	}
	if len(o.CPUs) > 0 {
		mask, err := cpuMask(o.CPUs)
		if err != nil {
			return err
		}
		if err := in.write("tracing_cpumask", mask); err != nil {
			return err
		}
	}
	for _, e := range Events {
		if err := in.write(filepath.Join("events", e, "enable"), "1"); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(in.dir, "trace_marker"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open trace_marker: %w", err)
	}
	in.marker = f
	return in.write("tracing_on", "1")
}

// cpuMask renders CPUs as the comma-separated 32-bit hex words
// tracing_cpumask takes (most significant word first).
func cpuMask(cpus []int) (string, error) {
	hi := 0
	for _, c := range cpus {
		if c < 0 || c > 4095 {
			return "", fmt.Errorf("tracefs: CPU %d out of range", c)
		}
		hi = max(hi, c)
	}
	words := make([]uint32, hi/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "%08x", words[i])
		if i > 0 {
			b.WriteByte(',')
		}
	}
	return b.String(), nil
}

func (in *Instance) write(name, val string) error {
	p := filepath.Join(in.dir, name)
	if err := os.WriteFile(p, []byte(val), 0); err != nil {
		return fmt.Errorf("write %q to %s: %w", val, p, err)
	}
	return nil
}

// Mark writes msg to the instance's trace_marker (one write syscall, 0
// allocs). It is recorded only on CPUs in the mask.
func (in *Instance) Mark(msg []byte) error {
	_, err := unix.Write(int(in.marker.Fd()), msg)
	return err
}

// SetOn turns recording on or off (tracing_on).
func (in *Instance) SetOn(on bool) error {
	if on {
		return in.write("tracing_on", "1")
	}
	return in.write("tracing_on", "0")
}

// Read returns the buffer as text (the non-consuming trace file); at most
// limit bytes are read.
func (in *Instance) Read(limit int64) ([]byte, error) {
	f, err := os.Open(filepath.Join(in.dir, "trace"))
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", in.dir, err)
	}
	return b, nil
}

// Close stops recording and removes the instance (which frees its buffer).
func (in *Instance) Close() error {
	var errs []error
	if in.marker != nil {
		errs = append(errs, in.marker.Close())
		in.marker = nil
	}
	_ = in.write("tracing_on", "0")
	if err := unix.Rmdir(in.dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove trace instance %s: %w", in.dir, err))
	}
	return errors.Join(errs...)
}

// Dir is the instance's directory.
func (in *Instance) Dir() string { return in.dir }

// MarkerFile is the instance's trace_marker: another process (a device
// under test the rig started) writes its marker lines there.
func (in *Instance) MarkerFile() string { return filepath.Join(in.dir, "trace_marker") }

// ReapStale removes the instances under root named prefix<pid>-<n> whose
// owner is gone: no process <pid>, or one that started after the instance
// was made (the pid was reused). It returns the names removed. A live
// session keeps its trace_marker open, and the kernel refuses to remove an
// instance with open files (EBUSY), so an instance whose owner this check
// cannot see (another pid namespace) is left alone too.
func ReapStale(root, prefix string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	if err != nil {
		return nil, fmt.Errorf("list trace instances: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		pid, ok := ownerPID(e.Name(), prefix)
		if !ok {
			continue
		}
		dir := filepath.Join(root, "instances", e.Name())
		fi, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if ownerAlive(pid, fi.ModTime()) {
			continue
		}
		switch err := unix.Rmdir(dir); {
		case err == nil:
			removed = append(removed, e.Name())
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EBUSY):
		default:
			errs = append(errs, fmt.Errorf("remove stale trace instance %s: %w", dir, err))
		}
	}
	return removed, errors.Join(errs...)
}

// ownerPID parses prefix<pid>-<n>.
func ownerPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	if _, err := strconv.ParseUint(n, 10, 64); err != nil {
		return 0, false
	}
	return pid, true
}

// ownerAlive reports whether process pid exists and started no later than
// made (with a 2 s allowance: the boot time in /proc/stat has 1 s
// resolution). When the start time cannot be read, an existing process
// counts as alive.
func ownerAlive(pid int, made time.Time) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	start, err := procstat.StartTime(pid)
	if err != nil {
		return true
	}
	return !start.After(made.Add(2 * time.Second))
}
