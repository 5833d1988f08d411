package middleware

import (
	"os"
	"path/filepath"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// SegmentSubscriber is one subscriber table entry of a segment.
type SegmentSubscriber struct {
	PID   int    // its getpid() in its own PID namespace (display only)
	Alive bool   // some process holds the entry's lease (docs/middleware.md, "Liveness")
	Node  string // node name
	Acked uint64 // last ring position consumed
	SubscriberStats
}

// SegmentInfo describes one shared-memory segment file.
type SegmentInfo struct {
	Path   string
	Domain string
	Topic  string
	Size   int64 // file size, bytes
	UID    int
	Mode   os.FileMode
	// Err says why the header could not be read (bad or foreign segment);
	// the fields below are then zero.
	Err            error
	MaxPayload     int
	Slots          int
	Reliability    Reliability
	PublisherPID   int  // 0: no publisher; in the publisher's own PID namespace
	PublisherAlive bool // some process holds the publisher lease
	Epoch          uint32
	Head           uint64 // last ring position published
	Publisher      PublisherStats
	Subscribers    []SegmentSubscriber
	// InUse is true while any process has the segment open (it holds a
	// shared flock on it; the kernel releases it when the process dies).
	InUse bool
	// WritingSlots counts slots being written or abandoned mid-write by a
	// dead publisher (never delivered; reused by the next publisher).
	WritingSlots int
}

// Stale reports whether no process uses the segment any more.
func (s SegmentInfo) Stale() bool { return !s.InUse }

// ListSegments lists the hilrig segments in dir ("" means /dev/shm). It
// reads headers without changing anything. Does not block.
func ListSegments(dir string) ([]SegmentInfo, error) {
	if dir == "" {
		dir = "/dev/shm"
	}
	ins, err := shm.List(dir)
	if err != nil {
		return nil, err
	}
	out := make([]SegmentInfo, 0, len(ins))
	for _, in := range ins {
		si := SegmentInfo{Path: in.Path, Domain: in.Domain, Topic: in.Topic, Size: in.Size, UID: in.UID,
			Mode: in.Mode, Err: mapErr(in.Err), MaxPayload: in.Params.MaxPayload, Slots: in.Params.RingLen,
			PublisherPID: in.PublisherPID, PublisherAlive: in.PublisherAlive, Epoch: in.Epoch, Head: in.Head,
			InUse: in.InUse, WritingSlots: in.WritingSlots,
			Publisher: PublisherStats{Published: in.Writer.Published, Blocked: time.Duration(in.Writer.BlockedNs),
				Timeouts: in.Writer.Timeouts, DroppedSubs: in.Writer.Dropped}}
		if in.Params.Reliable {
			si.Reliability = Reliable
		}
		for _, s := range in.Subscribers {
			si.Subscribers = append(si.Subscribers, SegmentSubscriber{PID: s.PID, Alive: s.Alive, Node: s.Name, Acked: s.Acked,
				SubscriberStats: SubscriberStats{Delivered: s.Delivered, Lost: s.Lost, Overruns: s.Overruns,
					TornRetries: s.TornRetries, Epochs: s.Epochs}})
		}
		out = append(out, si)
	}
	return out, nil
}

// CleanStale removes the segments in dir ("" means /dev/shm) that no
// process has open, and returns the paths it removed. A segment in use is
// never removed, even if its recorded PIDs are dead.
func CleanStale(dir string) ([]string, error) {
	if dir == "" {
		dir = "/dev/shm"
	}
	ins, err := shm.List(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, in := range ins {
		if in.InUse {
			continue
		}
		ok, err := shm.RemoveIfStale(in.Path)
		if err != nil {
			return removed, err
		}
		if ok {
			removed = append(removed, in.Path)
		}
	}
	return removed, nil
}

// RemoveSegment removes the segment file at path if no process uses it,
// and reports whether it did.
func RemoveSegment(path string) (bool, error) { return shm.RemoveIfStale(filepath.Clean(path)) }

// SegmentPath is the file a topic of a domain lives in under dir
// ("" means /dev/shm).
func SegmentPath(dir, domain, topic string) string {
	if dir == "" {
		dir = "/dev/shm"
	}
	return filepath.Join(dir, shm.FileName(domain, topic))
}
