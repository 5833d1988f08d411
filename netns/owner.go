package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/hilrig/hilrig/internal/procstat"
)

// A namespace outlives a process killed before its Close (the run a CI
// time-out or an operator's kill -9 ended), and its name carries only
// pid % 100000 (ip(8) keeps interface names to 15 bytes), which says
// nothing once the pid is reused. So New writes an owner record, the
// full pid and its start time, under ownerDir, and the first New of a
// process removes the namespaces whose recorded owner is gone. A
// namespace with no record (made by hand, or by an older hilrig) is left
// alone. /run is a tmpfs, as /run/netns is: both go at reboot.
var ownerDir = "/run/hilrig/netns"

var reapOnce sync.Once

// writeOwner records this process as the owner of namespace name.
func writeOwner(name string) error {
	pid := os.Getpid()
	start, err := procstat.StartTicks(pid)
	if err != nil {
		return fmt.Errorf("netns %s: owner start time: %w", name, err)
	}
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return fmt.Errorf("netns %s: owner record: %w", name, err)
	}
	rec := strconv.Itoa(pid) + " " + strconv.FormatInt(start, 10) + "\n"
	if err := os.WriteFile(filepath.Join(ownerDir, name), []byte(rec), 0o644); err != nil {
		return fmt.Errorf("netns %s: owner record: %w", name, err)
	}
	return nil
}

func removeOwner(name string) error {
	if err := os.Remove(filepath.Join(ownerDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns %s: owner record: %w", name, err)
	}
	return nil
}

// ownerGone reports whether the record for name names a process that no
// longer runs: its pid is free, or taken by a process started at another
// time. A record that is missing or unreadable is not "gone": the
// namespace may be another tool's, or its owner between `ip netns add`
// and writing the record.
func ownerGone(name string) bool {
	b, err := os.ReadFile(filepath.Join(ownerDir, name))
	if err != nil {
		return false
	}
	p, s, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseInt(s, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	same, err := procstat.Same(pid, start)
	return err == nil && !same
}

// reapStale deletes the "hlr" namespaces whose recorded owner is gone,
// with their records, after killing the processes still running in them
// (killInside), and the records whose namespace is gone. It returns the
// namespaces it deleted. Each ip(8) call is bounded by ctx.
func reapStale(ctx context.Context) ([]string, error) {
	names, err := List()
	if err != nil {
		return nil, err
	}
	var reaped []string
	var errs []error
	for _, n := range names {
		if !ownerGone(n) {
			continue
		}
		if _, err := killInside(n); err != nil {
			errs = append(errs, err)
		}
		if err := ip(ctx, "netns", "delete", n); err != nil {
			if _, serr := os.Stat(filepath.Join(runDir, n)); !errors.Is(serr, os.ErrNotExist) {
				errs = append(errs, err)
			} // else another process's reaper was first
			continue
		}
		reaped = append(reaped, n)
		errs = append(errs, removeOwner(n))
	}
	recs, err := os.ReadDir(ownerDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("netns: owner records: %w", err))
	}
	for _, r := range recs {
		if _, err := os.Stat(filepath.Join(runDir, r.Name())); errors.Is(err, os.ErrNotExist) && ownerGone(r.Name()) {
			errs = append(errs, removeOwner(r.Name()))
		}
	}
	return reaped, errors.Join(errs...)
}
