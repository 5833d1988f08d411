// Package ddsshm finds and removes the shared-memory files Fast DDS's SHM
// transport leaves when its process is killed. Pure Go: the rig (CGO-free)
// cleans up after the peer agents it ran.
//
// What Fast DDS 2.9 makes in /dev/shm (measured with the peer agent):
// per participant a segment fastrtps_<16 hex> and its lock file
// fastrtps_<16 hex>_el; per listening port fastrtps_port<N>, its
// fastrtps_port<N>_el, and the named semaphore sem.fastrtps_port<N>_mutex.
// The owner holds an flock on each _el file for as long as it lives. A
// clean stop removes all of them; a SIGKILL leaves all of them. A segment
// is a zombie when the flock of its _el file can be taken: no live
// process owns it — that is Fast DDS's own test (its `fastdds shm clean`).
package ddsshm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// prefix starts every Fast DDS SHM file name.
const prefix = "fastrtps_"

// Dir is where Fast DDS keeps its shared memory on Linux.
const Dir = "/dev/shm"

// MaxFiles bounds a list of segments taken from another process (an
// agent's started message): a participant has one segment plus one per
// listening port.
const MaxFiles = 256

// Valid checks a segment path that came from elsewhere (an agent, a
// command line) before anything acts on it: Dir/fastrtps_<name> with a
// name of [A-Za-z0-9_] only, no _el suffix (the lock file goes with its
// segment), at most 128 bytes.
func Valid(seg string) error {
	base, ok := strings.CutPrefix(seg, Dir+"/"+prefix)
	if !ok || base == "" || len(seg) > 128 || strings.HasSuffix(base, "_el") {
		return fmt.Errorf("ddsshm: %q is not a Fast DDS segment (want %s/%s<name>)", seg, Dir, prefix)
	}
	for _, r := range base {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("ddsshm: %q is not a Fast DDS segment (character %q)", seg, r)
		}
	}
	return nil
}

// Files returns the Fast DDS SHM segments (fastrtps_… without the _el
// suffix) under dir that process pid has mapped or open, read from
// /proc/<pid>/maps and /proc/<pid>/fd. Call it while the process runs:
// it is how a caller learns which files are its own.
func Files(pid int, dir string) ([]string, error) {
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.TrimSuffix(p, " (deleted)")
		if filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), prefix) {
			return
		}
		seen[strings.TrimSuffix(p, "_el")] = true
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("ddsshm: files of pid %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(maps), "\n") {
		if i := strings.Index(l, dir+"/"); i >= 0 {
			add(l[i:])
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("ddsshm: files of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			add(l)
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// RemoveZombies removes each of segs (paths as Files returns them) that
// no live process owns, with its _el lock file and, for a port segment,
// its named semaphore (sem.<name>_mutex beside it), while holding the
// lock, so no participant can take the segment over meanwhile. A segment
// whose lock is held is kept: another participant still uses it. A
// segment already gone is skipped. It returns the segments removed.
func RemoveZombies(segs []string) ([]string, error) {
	var removed []string
	var errs []error
	for _, seg := range segs {
		ok, err := removeIfZombie(seg)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, seg)
		}
	}
	return removed, errors.Join(errs...)
}

// removeIfZombie removes seg's files if its _el lock can be taken
// (nobody owns it). A segment without its _el file is a zombie too (its
// owner died between creating one and the other); neither there: nothing
// to do.
func removeIfZombie(seg string) (bool, error) {
	lock, err := os.OpenFile(seg+"_el", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, serr := os.Stat(seg); serr != nil {
			return false, nil
		}
	case err != nil:
		return false, fmt.Errorf("ddsshm: open lock %s_el: %w", seg, err)
	default:
		defer lock.Close() // releases the flock, after the removal
		switch owned, err := tryLock(lock); {
		case err != nil:
			return false, fmt.Errorf("ddsshm: lock %s_el: %w", seg, err)
		case owned:
			return false, nil // a live participant owns it
		}
	}
	files := []string{seg, seg + "_el"}
	if strings.HasPrefix(filepath.Base(seg), prefix+"port") {
		files = append(files, filepath.Join(filepath.Dir(seg), "sem."+filepath.Base(seg)+"_mutex"))
	}
	var errs []error
	gone := 0
	for _, f := range files {
		switch err := os.Remove(f); {
		case err == nil:
			gone++
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("ddsshm: remove %s: %w", f, err))
		}
	}
	return gone > 0, errors.Join(errs...)
}
