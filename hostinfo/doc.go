// Package hostinfo reads the host a run measures on: the environment record
// of a run (hostname, kernel, CPU model and governors, memory, real-time
// tuning and NIC IRQ affinity from /proc and /sys), the revision, branch and
// tags of the working tree the run's configuration sits in, and the calling
// process's resident set and Go heap.
//
// It fills report's plain data types (report.RunInfo, report.HostTuning) and
// judges nothing: the judgements on those values (report.IRQOverlaps) stay
// in report, which reads no host state itself.
//
// The git reader reads .git with the standard library only (os, path/filepath
// and compress/zlib for a loose annotated tag object): it never runs git, so a
// board or CI image without git still records the revision. It reads HEAD,
// loose refs, packed-refs (with their peeled lines) and a linked worktree's
// "gitdir:"/"commondir" files; it does not read pack files (see GitRef).
//
// Every reader here is best effort: an unreadable field stays empty, nothing
// fails or blocks beyond small file reads, and all functions are safe for
// concurrent use.
package hostinfo
