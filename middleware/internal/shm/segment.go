package shm

import (
	"os"
	"strings"
	"time"
)

// Prefix starts the file name of every segment, so tools and leak checks
// find them: Prefix + domain + "." + topic with '/' replaced by '~'.
const Prefix = "hilrig."

// FileName returns the segment file name of topic in domain.
func FileName(domain, topic string) string {
	return Prefix + domain + "." + strings.ReplaceAll(topic, "/", "~")
}

// SplitName parses a segment file name back into domain and topic.
func SplitName(name string) (domain, topic string, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "", "", false
	}
	domain, t, ok := strings.Cut(rest, ".")
	if !ok || domain == "" || t == "" {
		return "", "", false
	}
	return domain, strings.ReplaceAll(t, "~", "/"), true
}

// OpenOptions controls how a segment file is created and accepted.
type OpenOptions struct {
	Mode         os.FileMode // 0600 or 0660
	Gid          int         // -1: leave the group alone
	AllowForeign bool        // accept a segment owned by another uid
	HugePages    bool        // madvise(MADV_HUGEPAGE) the slots
	// ReserveAll reserves the whole pool at creation instead of the
	// working set (see reserve.go).
	ReserveAll bool
	PID        int   // recorded as creator
	NowNs      int64 // recorded as creation time (CLOCK_REALTIME)
	// InitWait bounds how long to wait for another process to finish
	// creating the segment. Default 1 s.
	InitWait time.Duration
}

// Segment is an open, mapped segment file. The file descriptor stays
// open and holds a shared flock for the segment's lifetime: `shm clean`
// treats a segment nobody holds locked as stale, and the kernel drops the
// lock when a process dies, however it dies.
type Segment struct {
	*Region
	Path    string
	Created bool
	// HugeAdvised is true when MADV_HUGEPAGE was accepted for the slots.
	HugeAdvised bool
}

// Open opens or creates the segment at path for p. Errors wrap
// ErrBadSegment, ErrContract or ErrPermission and name the file.
func Open(path string, p Params, o OpenOptions) (*Segment, error) {
	if o.InitWait <= 0 {
		o.InitWait = time.Second
	}
	for attempt := 0; ; attempt++ {
		s, retry, err := openOnce(path, p, o)
		if err == nil || !retry || attempt > 20 {
			return s, err
		}
	}
}
