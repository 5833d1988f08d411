package sys

import "syscall"

// Errno helpers for error classification without importing x/sys/unix.
var (
	EACCES     error = syscall.EACCES
	EPERM      error = syscall.EPERM
	EBUSY      error = syscall.EBUSY
	ENOENT     error = syscall.ENOENT
	EINVAL     error = syscall.EINVAL
	ENOTTY     error = syscall.ENOTTY
	ENODEV     error = syscall.ENODEV
	ENXIO      error = syscall.ENXIO
	EOPNOTSUPP error = syscall.EOPNOTSUPP
)
