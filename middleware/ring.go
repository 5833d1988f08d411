package middleware

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hilrig/hilrig/internal/thp"
	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// rings maps each ring this process uses to one mapping, shared by all
// its publishers and subscribers: two ends in one process meet in the same
// memory (the intra-process path: zero copies, no syscalls but futex).
var rings = struct {
	sync.Mutex
	m map[string]*sharedRing
}{m: map[string]*sharedRing{}}

type sharedRing struct {
	key  string
	r    *shm.Region
	seg  *shm.Segment // nil for anonymous (TransportIntra) rings
	refs int
}

// acquireRing opens (or reuses) the ring for p: a /dev/shm segment, or an
// anonymous mapping when intra is true.
func (n *Node) acquireRing(p shm.Params, intra bool) (*sharedRing, error) {
	key := "shm:" + filepath.Join(n.opts.ShmDir, shm.FileName(n.opts.Domain, p.Topic))
	if intra {
		key = "intra:" + n.opts.Domain + "/" + p.Topic
	}
	rings.Lock()
	defer rings.Unlock()
	if sr := rings.m[key]; sr != nil {
		name := key
		if sr.seg != nil {
			name = sr.seg.Path
		}
		if err := shm.Compare(name, sr.r.P, p); err != nil {
			return nil, mapErr(err)
		}
		if sr.seg != nil {
			// Already mapped here: check the file did not shrink since
			// (another process truncating it would make the next access
			// past the new end a SIGBUS).
			if err := sr.seg.CheckSize(); err != nil {
				return nil, mapErr(err)
			}
		}
		sr.refs++
		return sr, nil
	}
	sr := &sharedRing{key: key, refs: 1}
	now := time.Now().UnixNano()
	if intra {
		r, huge, err := shm.NewAnon(p, n.pid, now, n.opts.HugePages)
		if err != nil {
			return nil, fmt.Errorf("topic %q: %w", p.Topic, err)
		}
		if n.opts.HugePages && !huge {
			n.opts.Logger.Warn("middleware: no huge pages for intra-process ring (MAP_HUGETLB failed; reserve some in /proc/sys/vm/nr_hugepages); using normal pages", "topic", p.Topic)
		}
		sr.r = r
	} else {
		mode := os.FileMode(0o600)
		if n.gid >= 0 {
			mode = 0o660
		}
		seg, err := shm.Open(key[len("shm:"):], p, shm.OpenOptions{
			Mode: mode, Gid: n.gid, AllowForeign: n.opts.AllowForeignOwner,
			HugePages: n.opts.HugePages, PID: n.pid, NowNs: now, ReserveAll: n.opts.ShmReserveAll,
		})
		if err != nil {
			return nil, mapErr(err)
		}
		if n.opts.HugePages && !seg.HugeAdvised {
			n.opts.Logger.Warn("middleware: madvise(MADV_HUGEPAGE) refused for segment; using normal pages", "segment", seg.Path)
		} else if n.opts.HugePages {
			// The tmpfs's own huge= option decides, not shmem_enabled
			// (which governs only the kernel's internal shmem mount).
			if words, ok := thp.Tmpfs("/proc", "/sys", filepath.Dir(seg.Path)); !ok {
				n.opts.Logger.Warn("middleware: no transparent huge pages for the segment's tmpfs; segment uses normal pages", "segment", seg.Path, "why", words)
			}
		}
		sr.seg, sr.r = seg, seg.Region
	}
	rings.m[key] = sr
	return sr, nil
}

func releaseRing(sr *sharedRing) error {
	rings.Lock()
	defer rings.Unlock()
	sr.refs--
	if sr.refs > 0 {
		return nil
	}
	delete(rings.m, sr.key)
	if sr.seg != nil {
		return sr.seg.Close()
	}
	return shm.FreeAnon(sr.r)
}
