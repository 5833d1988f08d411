package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// osAvailable: Linux has network namespaces; Available checks the rest.
func osAvailable() error { return nil }

// setns moves the calling OS thread into the network namespace f.
func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

// killInside sends SIGKILL to every process whose network namespace is
// the one mounted at runDir/name, and returns their pids. A run killed
// before its Close leaves its daemons (ptp4l, sshd, agents, peers) running
// there, and deleting the mount alone would keep the namespace, its veth
// and their sockets alive through them. A process is in the namespace when
// its /proc/PID/ns/net is the same nsfs inode (device and inode number) as
// the mount, as `ip netns identify` decides. Processes that exit meanwhile
// are skipped. Only used on namespaces whose owner is gone.
func killInside(name string) ([]int, error) {
	var ns unix.Stat_t
	if err := unix.Stat(filepath.Join(runDir, name), &ns); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil // another process's reaper was first
		}
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("netns %s: list processes: %w", name, err)
	}
	self := os.Getpid()
	var killed []int
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil || st.Dev != ns.Dev || st.Ino != ns.Ino {
			continue
		}
		switch err := unix.Kill(pid, unix.SIGKILL); {
		case err == nil:
			killed = append(killed, pid)
		case !errors.Is(err, unix.ESRCH):
			errs = append(errs, fmt.Errorf("netns %s: kill pid %d: %w", name, pid, err))
		}
	}
	return killed, errors.Join(errs...)
}
