// Package procstat reads a process's start time from Linux's procfs: the
// one identity a pid keeps that a reused pid does not share. Used to tell
// a live owner from a pid the kernel has given to another process (trace
// instances, rack leases) and to name a run after its parent's start.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// userHZ is the kernel's USER_HZ, the unit of /proc/PID/stat's starttime:
// 100 on every Linux ABI Go supports.
const userHZ = 100

// errNotLinux: procfs with Linux's layout exists only there.
var errNotLinux = fmt.Errorf("procstat: %w (Linux /proc only)", errors.ErrUnsupported)

// StartTicks is field 22 of /proc/PID/stat: when pid started, in clock
// ticks (USER_HZ) since boot.
func StartTicks(pid int) (int64, error) {
	if runtime.GOOS != "linux" {
		return 0, errNotLinux
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStartTicks(b)
}

// Usage is what pid has used: its CPU time (user + system, fields 14 and
// 15 of /proc/PID/stat) and its resident set (field 24, in pages, as
// bytes). One procfs read.
func Usage(pid int) (cpu time.Duration, rssBytes int64, err error) {
	if runtime.GOOS != "linux" {
		return 0, 0, errNotLinux
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	f, err := statFields(b)
	if err != nil {
		return 0, 0, err
	}
	var v [3]int64
	for i, k := range []int{14, 15, 24} {
		if v[i], err = strconv.ParseInt(f[k-3], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("procstat: field %d %q: %w", k, f[k-3], err)
		}
	}
	return time.Duration(v[0]+v[1]) * time.Second / userHZ, v[2] * int64(os.Getpagesize()), nil
}

// statFields are the fields of /proc/PID/stat's text after the command
// name: element 0 is field 3 (state). At least 22 (to field 24).
func statFields(stat []byte) ([]string, error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("procstat: no ')' after the command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 22 {
		return nil, fmt.Errorf("procstat: %d fields after the command name, want 22 or more", len(f))
	}
	return f, nil
}

// parseStartTicks takes field 22 from the text of /proc/PID/stat. The
// command name (field 2) may hold spaces and parentheses: the fields after
// it start after its last ')'.
func parseStartTicks(stat []byte) (int64, error) {
	f, err := statFields(stat)
	if err != nil {
		return 0, err
	}
	// f[0] is field 3 (state), so field 22 is f[19].
	t, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: starttime %q: %w", f[19], err)
	}
	return t, nil
}

// Same reports whether pid is still the process that started at
// startTicks (StartTicks' unit): false, with no error, when no process
// has pid or one started at another time has it (the pid was reused).
// An error says the start time could not be read for another reason.
func Same(pid int, startTicks int64) (bool, error) {
	now, err := StartTicks(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return now == startTicks, nil
}

// StartTime is when pid started, wall clock: btime of /proc/stat (whole
// seconds) plus StartTicks, so it is good to about a second.
func StartTime(pid int) (time.Time, error) {
	ticks, err := StartTicks(pid)
	if err != nil {
		return time.Time{}, err
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			bt, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("procstat: btime %q: %w", v, err)
			}
			return time.Unix(bt, 0).Add(time.Duration(ticks) * time.Second / userHZ), nil
		}
	}
	return time.Time{}, fmt.Errorf("procstat: no btime line in /proc/stat")
}
