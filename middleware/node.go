package middleware

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"

	"github.com/hilrig/hilrig/middleware/internal/rt"
	"github.com/hilrig/hilrig/middleware/internal/shm"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// Node is a participant in a domain. It owns its publishers and
// subscribers. Safe for concurrent use.
type Node struct {
	name string
	// opts has every default filled in (the UDP transport reads Logger,
	// StampClock and Domain from here).
	opts NodeOptions
	gid  int
	pid  int // getpid(): recorded in segments for display only

	mu     sync.Mutex
	closed bool
	pubs   map[*Publisher]struct{}
	subs   map[*Subscriber]struct{}
	// ann holds the node's UDP announcers, one per (group, interface,
	// network namespace), shared by its UDP endpoints (udp.go).
	ann map[annKey]*udp.Announcer
}

// OpenNode opens a node named name (recorded in segment subscriber tables
// and shown by `hilrig shm ls`). It does not block. With Mlock it calls
// mlockall and fails with ErrPermission naming the capability if refused.
func OpenNode(name string, opts *NodeOptions) (*Node, error) {
	var o NodeOptions
	if opts != nil {
		o = *opts
	}
	if o.Domain == "" {
		o.Domain = "0"
	}
	if err := validDomain(o.Domain); err != nil {
		return nil, err
	}
	if o.ShmDir == "" {
		o.ShmDir = "/dev/shm"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch o.StampClock {
	case ClockRealtime, ClockTAI, ClockMonotonic:
	default:
		return nil, fmt.Errorf("%w: node %q: StampClock %d: want ClockRealtime, ClockTAI or ClockMonotonic", ErrContract, name, o.StampClock)
	}
	n := &Node{name: name, opts: o, gid: -1, pid: os.Getpid(),
		pubs: map[*Publisher]struct{}{}, subs: map[*Subscriber]struct{}{}}
	if o.Group != "" {
		gid, err := lookupGroup(o.Group)
		if err != nil {
			return nil, fmt.Errorf("node %q: NodeOptions.Group %q: %w", name, o.Group, err)
		}
		n.gid = gid
	}
	if o.Mlock {
		if err := rt.Mlockall(); err != nil {
			return nil, mapErr(fmt.Errorf("node %q: %w", name, err))
		}
	}
	return n, nil
}

func lookupGroup(g string) (int, error) {
	if id, err := strconv.Atoi(g); err == nil {
		return id, nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(gr.Gid)
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Domain is the node's domain (after defaults).
func (n *Node) Domain() string { return n.opts.Domain }

// Close closes all publishers and subscribers of the node. Idempotent.
// Subscribers blocked in Receive/Next return ErrClosed.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	pubs, subs := n.pubs, n.subs
	n.pubs, n.subs = nil, nil
	n.mu.Unlock()
	var errs []error
	for p := range pubs {
		errs = append(errs, p.close(false))
	}
	for s := range subs {
		errs = append(errs, s.close(false))
	}
	return errors.Join(errs...)
}

func (n *Node) add(p *Publisher, s *Subscriber) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("node %q: %w", n.name, ErrClosed)
	}
	if p != nil {
		n.pubs[p] = struct{}{}
	}
	if s != nil {
		n.subs[s] = struct{}{}
	}
	return nil
}

func (n *Node) remove(p *Publisher, s *Subscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pubs, p)
	delete(n.subs, s)
}

// mapErr puts internal sentinels under the exported ones (errors.Is works
// for both) and rewrites the text accordingly.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range [...]struct{ inner, outer error }{
		{shm.ErrBadSegment, ErrBadSegment},
		{shm.ErrContract, ErrContract},
		{shm.ErrPermission, ErrPermission},
		{rt.ErrPermission, ErrPermission},
		{shm.ErrBusy, ErrBusy},
		{shm.ErrTimeout, ErrTimeout},
		{shm.ErrLoanOutstanding, ErrLoanOutstanding},
		{shm.ErrNoSpace, ErrNoSpace},
		{shm.ErrCorrupt, ErrCorrupt},
	} {
		if errors.Is(err, m.inner) {
			return &mappedErr{msg: strings.Replace(err.Error(), m.inner.Error(), m.outer.Error(), 1), outer: m.outer, inner: err}
		}
	}
	return err
}
