package shm

import (
	"os"
	"path/filepath"
	"sort"
)

// SubInfo describes one subscriber table entry.
type SubInfo struct {
	PID   int
	Alive bool
	Name  string
	Acked uint64
	ReaderStats
}

// Info describes a segment file as `hilrig shm ls` shows it.
type Info struct {
	Path, Domain, Topic string
	Size                int64
	UID                 int
	Mode                os.FileMode
	// Err is set when the header is not readable; the other fields but
	// Path/Size/UID/Mode are then zero.
	Err            error
	Params         Params
	PublisherPID   int
	PublisherAlive bool
	Epoch          uint32
	Head           uint64
	Writer         WriterStats
	Subscribers    []SubInfo
	// InUse: some process holds the segment open (flock). Stale segments
	// are not in use.
	InUse bool
	// WritingSlots counts slots whose seqlock is odd: being written, or
	// abandoned mid-write by a publisher that died (harmless: such a slot
	// is never in the ring; the next publisher reuses it).
	WritingSlots int
}

// Stale reports whether nobody uses the segment: no process holds it.
func (i Info) Stale() bool { return !i.InUse }

// List reads every segment file in dir (names starting with Prefix).
func List(dir string) ([]Info, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range ents {
		if d, t, ok := SplitName(e.Name()); ok && e.Type().IsRegular() {
			in := Inspect(filepath.Join(dir, e.Name()))
			in.Domain, in.Topic = d, t
			out = append(out, in)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out, nil
}
