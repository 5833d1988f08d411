// Package lease keeps two controllers from driving one rack: a rack lease
// is a file <rack>.lease in a lease directory on the controller host,
// holding JSON that names the holder (holder, host, pid, since) and an
// open-file-description (OFD) lock that says the holder is alive.
//
// Liveness is the lock, never the pid: the holder takes an OFD lock
// (fcntl F_OFD_SETLK) on the file and keeps the descriptor open for its
// lifetime; the kernel drops the lock when the last descriptor of that
// open file description closes, however the process ends (SIGKILL
// included). A lease file no process holds a lock on is stale and is
// taken over by the next Acquire, which reports whom it replaced. Nothing
// depends on pids, so it works across PID namespaces (a container's pid 1
// is not the host's) and whatever host or user a stale file names — the
// approach of the shared-memory segments' leases (middleware/internal/shm,
// lease.go). The recorded pid, host and start time are for people.
//
// `hilrig rack lease` holds a lease for the calling shell: it hands the
// locked descriptor to a small keeper process (`hilrig rack keep`, see
// [Keep]) that waits for the shell to exit (pidfd) or the lease to be
// released, then exits, dropping the lock.
//
// The directory is trusted only if the rig owns it: it must belong to the
// caller's effective uid, be writable by nobody else (no group or world
// write bit) and not be a symbolic link; files in it are opened with
// O_NOFOLLOW relative to the checked directory, a new lease file with
// O_CREAT|O_EXCL. Every read-modify-write runs under a short flock(2) on
// <rack>.lock, so acquiring is atomic between processes.
//
// Leases of one Group share the rack (the Ginkgo processes and suite
// binaries of one test run): every member holds a shared lock, and the
// lease lasts while any member lives.
//
// The host lease holds for controllers on one host. Lab-wide exclusion
// (two controller hosts) is the results store's: report/store/postgres's
// RackLeases hold a PostgreSQL session advisory lock keyed by the rack.
// Consumers depend on the Locker interface they declare
// (rig.Options.Lease).
//
// Linux; elsewhere every call returns an error matching
// errors.ErrUnsupported.
package lease
