package udp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// AnnouncerConfig configures a node's Announcer.
type AnnouncerConfig struct {
	// To is the announce group (on the socket's interface) or a unicast
	// address.
	To     netip.AddrPort
	Period time.Duration // default 1 s
	Node   string        // node name (≤ MaxNameLen bytes)
	// MaxBytes bounds one ANNOUNCE datagram; a node whose endpoints do not
	// fit sends several per period. Default AnnounceMTU (1472).
	MaxBytes int
	// Key, when set, seals every ANNOUNCE and makes the announcer ignore
	// announces without a valid tag (a spoofed announce cannot steer a
	// publisher to a made-up subscriber).
	Key    *Key
	Logger *slog.Logger
}

// LearnFunc receives one subscriber entry of a foreign or local ANNOUNCE
// (from is the datagram's source). It runs on the announcer's goroutine
// and must not call back into the Announcer.
type LearnFunc func(from netip.AddrPort, e *AnnounceEntry)

// Announcer is the announce of one node on one group: one ANNOUNCE
// datagram per Period listing every registered endpoint (split only when
// it would exceed MaxBytes), and the reader of the group that hands
// subscriber entries to the registered publishers. Safe for concurrent
// use; a goroutine it owns does the I/O.
type Announcer struct {
	cfg   AnnouncerConfig
	conn  Conn
	epoch uint32
	base  time.Time

	mu       sync.Mutex // guards eps, due, lastSent; held while learn funcs run
	eps      []*AnnounceEndpoint
	due      int64 // next announce, ns since base
	lastSent int64
	closed   bool
	sent     uint64 // datagrams sent
	mac      *mac   // seals (guarded by mu); nil unkeyed
	vmac     *mac   // verifies (the loop goroutine)

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// AnnounceEndpoint is one endpoint registered with an Announcer.
type AnnounceEndpoint struct {
	a     *Announcer
	entry AnnounceEntry
	learn LearnFunc
}

// NewAnnouncer starts announcing on conn (which it owns and closes). It
// sends nothing while no endpoint is registered.
func NewAnnouncer(conn Conn, cfg AnnouncerConfig) *Announcer {
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = AnnounceMTU
	}
	// One entry with the longest names must always fit.
	cfg.MaxBytes = min(max(cfg.MaxBytes, AnnounceHeaderLen+2*MaxNameLen+AnnounceEntryLen), MaxDatagram)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Announcer{cfg: cfg, conn: conn, epoch: randEpoch(), base: time.Now(),
		done: make(chan struct{}), due: -1, lastSent: -1 << 62}
	for a.epoch == 0 {
		a.epoch = randEpoch()
	}
	a.mac, a.vmac = cfg.Key.newMAC(uint64(time.Now().UnixNano())), cfg.Key.newMAC(0)
	a.wg.Add(1)
	go a.loop()
	return a
}

// Period is the announce interval.
func (a *Announcer) Period() time.Duration { return a.cfg.Period }

// Sent is the number of ANNOUNCE datagrams sent so far.
func (a *Announcer) Sent() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}

func (a *Announcer) now() int64 { return int64(time.Since(a.base)) }

// Add registers an endpoint; learn (may be nil) receives subscriber
// entries for e.TopicID. The endpoint appears in the next announce, which
// is brought forward to at most Period/10 after the previous one, so
// endpoints created together share one datagram and start-up never
// floods.
func (a *Announcer) Add(e AnnounceEntry, learn LearnFunc) (*AnnounceEndpoint, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	ep := &AnnounceEndpoint{a: a, entry: e, learn: learn}
	a.eps = append(a.eps, ep)
	soon := max(a.now(), a.lastSent+int64(a.cfg.Period)/10)
	if a.due < 0 || soon < a.due {
		a.due = soon
		// Under mu, like the loop's own deadline, so neither overrides a
		// later one; a blocked read recomputes its deadline at once.
		_ = a.conn.SetReadDeadline(a.base.Add(time.Duration(soon)))
	}
	return ep, nil
}

// Announcer is the announcer the endpoint is registered with.
func (ep *AnnounceEndpoint) Announcer() *Announcer { return ep.a }

// Remove unregisters the endpoint; once it returns, its learn func is not
// running and will not run again. It reports how many endpoints remain.
func (ep *AnnounceEndpoint) Remove() int {
	a := ep.a
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.eps {
		if x == ep {
			a.eps = append(a.eps[:i], a.eps[i+1:]...)
			break
		}
	}
	if len(a.eps) == 0 {
		a.due = -1
	}
	return len(a.eps)
}

// Close stops the goroutine and closes the socket. Idempotent.
func (a *Announcer) Close() error {
	var err error
	a.once.Do(func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
		close(a.done)
		err = a.conn.Close()
		a.wg.Wait()
	})
	return err
}

// sendLocked sends the node's ANNOUNCE datagram(s) (mu held).
func (a *Announcer) sendLocked(msg *Announce, buf []byte) {
	msg.NodeEpoch, msg.N = a.epoch, 0
	msg.SetNode(a.cfg.Node)
	size := AnnounceHeaderLen + int(msg.NodeLen)
	flush := func() {
		if msg.N == 0 {
			return
		}
		n, err := msg.MarshalBinaryTo(buf)
		if err == nil && a.mac != nil {
			n, err = a.mac.seal(buf, n)
		}
		if err == nil {
			if err := a.conn.WriteTo(buf[:n], a.cfg.To); err != nil {
				a.cfg.Logger.Warn("udp: announce send failed", "group", a.cfg.To, "err", err)
			} else {
				a.sent++
			}
		}
		msg.N, size = 0, AnnounceHeaderLen+int(msg.NodeLen)
	}
	for _, ep := range a.eps {
		if msg.N == MaxAnnounceEntries || size+ep.entry.WireLen() > a.cfg.MaxBytes {
			flush()
		}
		msg.Entries[msg.N] = ep.entry
		msg.N++
		size += ep.entry.WireLen()
	}
	flush()
}

func (a *Announcer) loop() {
	defer a.wg.Done()
	buf := make([]byte, MaxDatagram+1)
	out := make([]byte, a.cfg.MaxBytes+AuthLen)
	var in, msg Announce
	for {
		a.mu.Lock()
		now := a.now()
		if a.due >= 0 && now >= a.due {
			a.sendLocked(&msg, out)
			a.lastSent = now
			a.due = now + int64(a.cfg.Period)
		}
		deadline := now + int64(a.cfg.Period)
		if a.due >= 0 {
			deadline = a.due
		}
		_ = a.conn.SetReadDeadline(a.base.Add(time.Duration(deadline)))
		a.mu.Unlock()
		n, from, _, err := a.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-a.done:
				return
			default:
			}
			continue
		}
		if decodeAnnounce(&in, buf[:n], a.vmac) != nil {
			continue
		}
		a.mu.Lock()
		for i := 0; i < in.N; i++ {
			e := &in.Entries[i]
			if e.Role != RoleSubscriber {
				continue
			}
			for _, ep := range a.eps {
				if ep.learn != nil && ep.entry.TopicID == e.TopicID {
					ep.learn(from, e)
				}
			}
		}
		a.mu.Unlock()
	}
}

// ListenAnnounces reads ANNOUNCE datagrams from conn and calls fn for each
// valid one until ctx is done (returns ctx.Err()) or conn fails. Invalid
// datagrams are skipped. For tools listing live endpoints; fn runs on the
// calling goroutine and must not keep a. Blocks; closes nothing.
func ListenAnnounces(ctx context.Context, conn Conn, fn func(from netip.AddrPort, a *Announce)) error {
	buf := make([]byte, MaxDatagram+1)
	var a Announce
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, from, _, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return ErrClosed
			}
			return err
		}
		if a.UnmarshalBinary(buf[:n]) == nil {
			fn(from, &a)
		}
	}
}

// decodeAnnounce validates and decodes an ANNOUNCE, authenticated with m
// (nil: an unauthenticated domain, where authenticated announces are
// refused as unverifiable).
func decodeAnnounce(a *Announce, b []byte, m *mac) error {
	c, err := Parse(b)
	if err != nil {
		return err
	}
	if c.Kind != KindAnnounce {
		return ErrKind
	}
	if m != nil || c.Auth {
		if m == nil || !c.Auth {
			return ErrAuth
		}
		if _, ok := m.verify(b); !ok {
			return ErrAuth
		}
	}
	return a.decode(c, c.body(b))
}
