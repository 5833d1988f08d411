package middleware

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// UDP transport (issue 3): maps Publisher/Subscriber onto
// internal/udp's Sender and Receiver. Sockets are created in the calling
// thread's network namespace, so a test that calls NewPublisher inside
// (*netns.NS).Do gets a publisher living in that namespace.

// UDPSubscriberStats are a UDP subscriber's transport counters (malformed,
// unknown-source, forged and duplicate datagrams, reassembly, NACKs, kernel
// receive timestamps). Safe to read concurrently.
type UDPSubscriberStats = udp.ReceiverStats

// UDPPublisherStats are a UDP publisher's transport counters plus the
// injected faults (zero without PublisherOptions.UDPFault).
type UDPPublisherStats struct {
	udp.SenderStats
	Fault udp.FaultStats
	// Local is the socket address ACKNACKs arrive at.
	Local netip.AddrPort
	// Epoch is this publisher's epoch on the wire.
	Epoch uint32
}

// UDPStats returns the UDP transport counters; false when the publisher
// is closed or does not use UDP. Safe concurrently.
func (p *Publisher) UDPStats() (UDPPublisherStats, bool) {
	if !p.lc.enter() {
		return UDPPublisherStats{}, false
	}
	defer p.exit()
	u, ok := p.t.(*udpPub)
	if !ok {
		return UDPPublisherStats{}, false
	}
	s := UDPPublisherStats{SenderStats: u.s.Stats(), Local: u.s.LocalAddr(), Epoch: u.s.Epoch()}
	if u.fault != nil {
		s.Fault = u.fault.Stats()
	}
	return s, true
}

// LiveSubscribers is how many UDP subscribers the publisher has heard from
// (ACKNACKs) and not timed out; 0 for other transports. Safe concurrently.
func (p *Publisher) LiveSubscribers() int {
	if !p.lc.enter() {
		return 0
	}
	defer p.exit()
	if u, ok := p.t.(*udpPub); ok {
		return u.s.LiveSubscribers()
	}
	return 0
}

// FlushBatch sends the UDP publisher's open batch now (UDPConfig.BatchBytes);
// a no-op for other transports. Not safe concurrently with Send.
func (p *Publisher) FlushBatch() error {
	if !p.lc.enter() {
		return ErrClosed
	}
	defer p.exit()
	if u, ok := p.t.(*udpPub); ok {
		return mapUDPErr(u.s.Flush())
	}
	return nil
}

// UDPStats returns the UDP transport counters; false when the subscriber
// is closed or does not use UDP. Safe concurrently.
func (s *Subscriber) UDPStats() (UDPSubscriberStats, bool) {
	if !s.lc.enter() {
		return UDPSubscriberStats{}, false
	}
	defer s.exit()
	u, ok := s.t.(*udpSub)
	if !ok {
		return UDPSubscriberStats{}, false
	}
	return u.r.Stats(), true
}

// LocalUDPAddr is the subscriber's bound UDP address (useful with an
// ephemeral Listen port); invalid for other transports.
func (s *Subscriber) LocalUDPAddr() netip.AddrPort {
	if !s.lc.enter() {
		return netip.AddrPort{}
	}
	defer s.exit()
	if u, ok := s.t.(*udpSub); ok {
		return u.r.LocalAddr()
	}
	return netip.AddrPort{}
}

// mapUDPErr maps internal/udp sentinels onto the package's. Hot-path
// errors come back as the bare sentinel (no allocation).
func mapUDPErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, udp.ErrTimeout):
		return ErrTimeout
	case errors.Is(err, udp.ErrTooLarge):
		return ErrTooLarge
	case errors.Is(err, udp.ErrClosed):
		return ErrClosed
	case errors.Is(err, udp.ErrLoanOutstanding):
		return ErrLoanOutstanding
	case errors.Is(err, udp.ErrKeyMode):
		return fmt.Errorf("%w: %w", ErrPermission, err)
	case errors.Is(err, udp.ErrConfig):
		return fmt.Errorf("%w: %w", ErrContract, err)
	}
	return err
}

// udpParams is a validated UDP contract.
type udpParams struct {
	topicID  uint32
	peers    []netip.AddrPort
	group    netip.AddrPort
	listen   netip.AddrPort
	source   netip.AddrPort
	allow    []netip.Prefix
	fragSize int
	reliable bool
	depth    int
	loopback bool
	announce netip.AddrPort
	keyFile  string
	key      *udp.Key // nil: unauthenticated
}

func udpContractErr(c Contract, field string, v any, why string) error {
	return fmt.Errorf("%w: topic %q: udp.%s %v: %s", ErrContract, c.Topic, field, v, why)
}

// parseUDP validates c's UDP part and loads its domain key (the
// contract's KeyFile, else the node's UDPKeyFile).
func parseUDP(c Contract, nodeKeyFile string) (udpParams, error) {
	var p udpParams
	if err := validTopic(c.Topic); err != nil {
		return p, err
	}
	if c.MaxPayload <= 0 || c.MaxPayload > udp.MaxPayload {
		return p, fmt.Errorf("%w: topic %q: max payload %d bytes, want 1..%d on UDP", ErrContract, c.Topic, c.MaxPayload, udp.MaxPayload)
	}
	if c.Reliability > Reliable {
		return p, fmt.Errorf("%w: topic %q: reliability %d unknown", ErrContract, c.Topic, c.Reliability)
	}
	if c.Depth < 0 {
		return p, fmt.Errorf("%w: topic %q: depth %d negative", ErrContract, c.Topic, c.Depth)
	}
	u := c.UDP
	p.topicID, p.reliable, p.depth = TopicID(c.Topic), c.Reliability == Reliable, c.Depth
	p.loopback = true
	for i, s := range u.Peers {
		ap, err := netip.ParseAddrPort(s)
		if err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
			return p, udpContractErr(c, fmt.Sprintf("peers[%d]", i), fmt.Sprintf("%q", s), "want numeric IPv4 \"ip:port\"")
		}
		p.peers = append(p.peers, ap)
		p.loopback = p.loopback && ap.Addr().IsLoopback()
	}
	if u.Group != "" {
		ap, err := netip.ParseAddrPort(u.Group)
		if err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
			return p, udpContractErr(c, "group", fmt.Sprintf("%q", u.Group), "want an IPv4 multicast \"addr:port\"")
		}
		if u.Interface == "" {
			return p, udpContractErr(c, "interface", `""`, "required with a group (lo or a namespace veth; never the default interface)")
		}
		p.group = ap
		p.loopback = p.loopback && u.Interface == "lo"
	}
	if u.Announce != "" {
		ap, err := netip.ParseAddrPort(u.Announce)
		if err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
			return p, udpContractErr(c, "announce", fmt.Sprintf("%q", u.Announce), "want an IPv4 multicast \"addr:port\"")
		}
		if u.Interface == "" {
			return p, udpContractErr(c, "interface", `""`, "required with announce (lo or a namespace veth; never the default interface)")
		}
		p.announce = ap
	}
	if u.Listen != "" {
		ap, err := netip.ParseAddrPort(u.Listen)
		if err != nil || !ap.Addr().Is4() {
			return p, udpContractErr(c, "listen", fmt.Sprintf("%q", u.Listen), "want numeric IPv4 \"ip:port\"")
		}
		p.listen = ap
	}
	if u.Source != "" {
		ap, err := netip.ParseAddrPort(u.Source)
		if err != nil || !ap.Addr().Is4() {
			return p, udpContractErr(c, "source", fmt.Sprintf("%q", u.Source), "want numeric IPv4 \"ip:port\"")
		}
		p.source = ap
	}
	for i, s := range u.AllowFrom {
		var pf netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			pf, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				pf = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return p, udpContractErr(c, fmt.Sprintf("allow_from[%d]", i), fmt.Sprintf("%q", s), "want an IP address or CIDR prefix")
		}
		p.allow = append(p.allow, pf.Masked())
	}
	if p.keyFile = u.KeyFile; p.keyFile == "" {
		p.keyFile = nodeKeyFile
	}
	if p.keyFile != "" {
		k, err := udp.LoadKeyFile(p.keyFile)
		if err != nil {
			return p, fmt.Errorf("topic %q: udp.key_file: %w", c.Topic, mapUDPErr(err))
		}
		p.key = k
	}
	// An authenticated datagram carries AuthLen more bytes.
	over := p.key.Overhead()
	switch {
	case u.FragmentSize != 0:
		p.fragSize = u.FragmentSize
	case u.MTU != 0:
		p.fragSize = u.MTU - 28 - udp.DataHeaderLen - over
	case p.loopback && (len(p.peers) > 0 || p.group.IsValid()):
		p.fragSize = udp.MaxDatagram - udp.DataHeaderLen - over
	default:
		p.fragSize = 1500 - 28 - udp.DataHeaderLen - over
	}
	if top := udp.MaxDatagram - udp.DataHeaderLen - over; p.fragSize < udp.MinFragSize || p.fragSize > top {
		return p, udpContractErr(c, "fragment_size/mtu", p.fragSize, fmt.Sprintf("fragment payload must be %d..%d bytes", udp.MinFragSize, top))
	}
	return p, nil
}

type udpPub struct {
	s     *udp.Sender
	fault *udp.FaultConn
	n     *Node
	ann   *udp.AnnounceEndpoint // nil without UDP.Announce
}

func newUDPPublisher(n *Node, c Contract, o *PublisherOptions) (pubTransport, error) {
	p, err := parseUDP(c, n.opts.UDPKeyFile)
	if err != nil {
		return nil, err
	}
	if len(p.peers) == 0 && !p.group.IsValid() && !p.announce.IsValid() {
		return nil, udpContractErr(c, "peers/group", "none", "a UDP publisher needs at least one peer, a group or an announce group")
	}
	dests := p.peers
	if p.group.IsValid() {
		dests = append(dests[:len(dests):len(dests)], p.group)
	}
	sock, err := udp.Open(udp.SocketConfig{
		Listen: p.source, Interface: c.UDP.Interface,
		RcvBuf: c.UDP.RcvBuf, SndBuf: cmpOr(c.UDP.SndBuf, 4<<20), Logger: n.opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("topic %q: %w", c.Topic, mapUDPErr(err))
	}
	var conn udp.Conn = sock
	t := &udpPub{n: n}
	if f := udpFaultOf(o); f != nil {
		fc := udp.FaultConfig{Seed: f.Seed, Drop: f.Drop, Duplicate: f.Duplicate, Reorder: f.Reorder, DelayRate: f.DelayRate, Delay: f.Delay}
		if f.DataOnly {
			fc.Kinds = udp.KindMask(udp.KindData, udp.KindBatch)
		}
		t.fault = udp.NewFaultConn(sock, fc)
		conn = t.fault
	}
	// A socket connected to each unicast subscriber (best effort,
	// unbatched: the sender decides): no route lookup per datagram
	// (docs/udp.md, "Connected sockets"). Not under fault injection,
	// which wraps the one shared socket.
	var dial func(netip.AddrPort) (udp.Conn, error)
	if t.fault == nil {
		dial = func(to netip.AddrPort) (udp.Conn, error) {
			return udp.Open(udp.SocketConfig{
				Listen: netip.AddrPortFrom(sock.LocalAddr().Addr(), 0), Interface: c.UDP.Interface, Connect: to,
				SndBuf: cmpOr(c.UDP.SndBuf, 4<<20), Logger: n.opts.Logger,
			})
		}
	}
	timeout := c.UDP.SubscriberTimeout
	sendTimeout := timeoutOr(o)
	clock := n.opts.StampClock
	t.s, err = udp.NewSender(conn, udp.SenderConfig{
		TopicID: p.topicID, MaxPayload: c.MaxPayload, FragSize: p.fragSize, Reliable: p.reliable, Depth: p.depth, KeepLast: c.UDP.KeepLast,
		Peers: dests, AllowFrom: p.allow, HeartbeatPeriod: c.UDP.HeartbeatPeriod, SubscriberTimeout: timeout,
		SendTimeout: sendTimeout, BatchBytes: c.UDP.BatchBytes, BatchDelay: c.UDP.BatchDelay,
		Clock: int32(clock), Stamp: func() (int64, int64) { return stampNow(clock) },
		HeaderVersion: 1, LearnTTL: 3 * annPeriod(c), PaceRate: c.UDP.PaceRate, PaceBurst: c.UDP.PaceBurst,
		Key: p.key, Logger: n.opts.Logger, Dial: dial,
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("topic %q: %w", c.Topic, mapUDPErr(err))
	}
	if p.announce.IsValid() {
		e := udp.AnnounceEntry{Role: udp.RolePublisher, Port: t.s.LocalAddr().Port(), Epoch: t.s.Epoch()}
		e.SetTopic(c.Topic)
		if t.ann, err = n.announce(c, p, e, t.s.LearnAnnounce); err != nil {
			t.s.Close()
			return nil, err
		}
	}
	return t, nil
}

func cmpOr(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

func timeoutOr(o *PublisherOptions) time.Duration {
	if o != nil && o.SendTimeout > 0 {
		return o.SendTimeout
	}
	return 0 // udp default: 1 s
}

func (t *udpPub) loan() ([]byte, error) {
	b, err := t.s.Loan()
	return b, mapUDPErr(err)
}
func (t *udpPub) publish(n int) error       { return mapUDPErr(t.s.Publish(n)) }
func (t *udpPub) discard()                  { t.s.Discard() }
func (t *udpPub) send(payload []byte) error { return mapUDPErr(t.s.Send(payload)) }
func (t *udpPub) close() error {
	t.n.unannounce(t.ann) // first: the announcer stops feeding the sender
	err := t.s.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (t *udpPub) stats(s *PublisherStats) {
	st := t.s.Stats()
	s.Published += st.Published
	s.Blocked += st.Blocked
	s.Timeouts += st.Timeouts
	s.DroppedSubs += st.DroppedSubs
}

type udpSub struct {
	n    *Node
	ann  *udp.AnnounceEndpoint // nil without UDP.Announce
	r    *udp.Receiver
	wait WaitStrategy
	msg  Message
	fn   func(*Message)
	cb   func(*udp.Delivery)
	inCB *atomic.Int32 // the Subscriber's: 1 while fn runs (Close from inside it must not wait)
}

func newUDPSubscriber(n *Node, c Contract, o *SubscriberOptions, inCB *atomic.Int32) (subTransport, error) {
	p, err := parseUDP(c, n.opts.UDPKeyFile)
	if err != nil {
		return nil, err
	}
	if !p.listen.IsValid() && !p.group.IsValid() {
		return nil, udpContractErr(c, "listen", `""`, "a UDP subscriber needs a listen address or a group")
	}
	var wait WaitStrategy
	if o != nil {
		wait = o.Wait
	}
	rcvbuf := c.UDP.RcvBuf
	queue := 0 // reliable: bounded by the send window, not here
	switch {
	case !p.reliable:
		// Best effort keeps the contract's depth, no more: in the socket
		// and in the receiver's queue (docs/udp.md, "Best effort: a
		// bounded queue").
		queue = max(p.depth, 1)
		if rcvbuf == 0 {
			rcvbuf = udp.BestEffortRcvBuf(queue, c.MaxPayload, p.fragSize)
		}
	case rcvbuf == 0:
		rcvbuf = min(max(4<<20, 2*c.MaxPayload), 64<<20)
	}
	if !p.listen.IsValid() && p.group.IsValid() && p.announce.IsValid() && p.group.Port() == p.announce.Port() {
		return nil, udpContractErr(c, "announce", c.UDP.Announce, "must use another port than the data group")
	}
	sock, err := udp.Open(udp.SocketConfig{
		Listen: p.listen, Group: p.group, Interface: c.UDP.Interface,
		RcvBuf: rcvbuf, SndBuf: c.UDP.SndBuf, BusyPoll: c.UDP.BusyPoll, Timestamps: true, DedicatedWait: c.UDP.DedicatedReader,
		Logger: n.opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("topic %q: %w", c.Topic, mapUDPErr(err))
	}
	r, err := udp.NewReceiver(sock, udp.ReceiverConfig{
		TopicID: p.topicID, MaxPayload: c.MaxPayload, Reliable: p.reliable, Depth: p.depth, KeepLast: c.UDP.KeepLast, Queue: queue,
		ReassemblyBytes: c.UDP.ReassemblyBytes, ReassemblyTimeout: c.UDP.ReassemblyTimeout,
		NackInterval: c.UDP.NackInterval, AllowFrom: p.allow, Key: p.key, Logger: n.opts.Logger,
	})
	if err != nil {
		sock.Close()
		return nil, fmt.Errorf("topic %q: %w", c.Topic, mapUDPErr(err))
	}
	t := &udpSub{r: r, wait: wait, n: n, inCB: inCB}
	if p.announce.IsValid() {
		local := r.LocalAddr()
		e := udp.AnnounceEntry{Role: udp.RoleSubscriber, Port: local.Port()}
		if a := local.Addr(); a.Is4() && !a.IsUnspecified() && !a.IsMulticast() {
			e.Addr = a.As4()
		}
		e.SetTopic(c.Topic)
		if t.ann, err = n.announce(c, p, e, nil); err != nil {
			r.Close()
			return nil, err
		}
	}
	t.cb = t.deliver // bound once: no per-call closure allocation
	return t, nil
}

func (t *udpSub) deliver(d *udp.Delivery) {
	m := &t.msg
	m.RecvMono = monoclock.Now()
	m.Header = Header{Version: d.Version, Flags: d.Flags, TopicID: d.TopicID, Epoch: d.Epoch, Seq: d.Seq,
		SendMono: d.SendMono, SendClock: d.SendClock, Clock: ClockID(d.Clock), Len: uint32(len(d.Payload))}
	m.Lost = d.Lost
	m.Payload = d.Payload
	t.inCB.Store(1)
	t.fn(m)
	t.inCB.Store(0)
	m.Payload = nil
}

func (t *udpSub) next(ctx context.Context, fn func(*Message)) error {
	t.fn = fn
	defer func() { t.fn = nil }()
	if t.wait == WaitSpin || t.wait == WaitHybrid {
		for i := 0; ; i++ {
			if t.r.TryNext(t.cb) {
				return nil
			}
			if i&1023 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
				if t.r.Interrupted() {
					return ErrClosed
				}
				if t.wait == WaitHybrid {
					break
				}
			}
		}
	}
	return mapUDPErr(t.r.Next(ctx, t.cb))
}

// interrupt makes a blocked next return ErrClosed (Subscriber.Close from
// another goroutine); the receiver itself is closed at teardown.
func (t *udpSub) interrupt() { t.r.Interrupt() }

func (t *udpSub) stats(s *SubscriberStats) {
	st := t.r.Stats()
	s.Delivered += st.Delivered
	s.Lost += st.Lost
	s.Epochs += st.Epochs
}

func (t *udpSub) close() error {
	t.n.unannounce(t.ann)
	err := t.r.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// annKey names one announcer of a node: endpoints announcing on the same
// group and interface in the same network namespace share one datagram.
type annKey struct {
	group netip.AddrPort
	iface string
	netns uint64 // inode of the calling thread's network namespace
	key   string // domain key file: endpoints under different keys announce apart
}

func annPeriod(c Contract) time.Duration {
	if c.UDP.AnnouncePeriod > 0 {
		return c.UDP.AnnouncePeriod
	}
	return time.Second
}

// announce registers an endpoint with the node's announcer for the
// contract's announce group, opening the announcer (one socket joined to
// the group, in the calling thread's namespace) for the first endpoint.
func (n *Node) announce(c Contract, p udpParams, e udp.AnnounceEntry, learn udp.LearnFunc) (*udp.AnnounceEndpoint, error) {
	group := p.announce
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("node %q: %w", n.name, ErrClosed)
	}
	k := annKey{group: group, iface: c.UDP.Interface, netns: threadNetns(), key: p.keyFile}
	a := n.ann[k]
	if a == nil {
		sock, err := udp.Open(udp.SocketConfig{Group: group, Interface: c.UDP.Interface, Logger: n.opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("topic %q: announce socket %s on %s: %w", c.Topic, group, c.UDP.Interface, mapUDPErr(err))
		}
		a = udp.NewAnnouncer(sock, udp.AnnouncerConfig{To: group, Period: annPeriod(c), Node: n.name, Key: p.key, Logger: n.opts.Logger})
		if n.ann == nil {
			n.ann = map[annKey]*udp.Announcer{}
		}
		n.ann[k] = a
	} else if a.Period() != annPeriod(c) {
		return nil, udpContractErr(c, "announce_period", annPeriod(c),
			fmt.Sprintf("node %q already announces on %s every %v; one node sends one announce per period", n.name, group, a.Period()))
	}
	ep, err := a.Add(e, learn)
	if err != nil {
		return nil, fmt.Errorf("topic %q: announce: %w", c.Topic, mapUDPErr(err))
	}
	return ep, nil
}

// unannounce removes an endpoint (nil: none) and closes its announcer when
// it was the last one.
func (n *Node) unannounce(ep *udp.AnnounceEndpoint) {
	if ep == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep.Remove() > 0 {
		return
	}
	for k, a := range n.ann {
		if a == ep.Announcer() {
			delete(n.ann, k)
			_ = a.Close()
		}
	}
}

// UDPAnnounce is one endpoint listed in a node's announce, as seen by
// ListenUDPAnnounces. A node sends one datagram per period listing all its
// endpoints on that group (docs/udp.md, "Addressing").
type UDPAnnounce struct {
	From  netip.AddrPort // source of the datagram
	Role  string         // "publisher" or "subscriber"
	Topic string
	Node  string
	Port  uint16 // a subscriber's data port, a publisher's ACKNACK port
	Epoch uint32 // publisher epoch (0 for subscribers)
	// Addr is the address the endpoint is bound to; invalid when it is
	// bound to 0.0.0.0 (then From's address reaches it).
	Addr netip.Addr
	// NodeEpoch is random per node announcer: it changes when the node
	// restarts or all its announcing endpoints closed and reopened.
	NodeEpoch uint32
	// Entries is the number of endpoints the datagram listed.
	Entries int
}

// ListenUDPAnnounces joins the announce group ("addr:port") on iface (lo or
// a namespace veth) and calls fn for every endpoint listed in every valid
// announce datagram until ctx is done
// (returns ctx.Err()). For tools listing live endpoints. Blocks; fn runs on
// the calling goroutine.
func ListenUDPAnnounces(ctx context.Context, group, iface string, fn func(UDPAnnounce)) error {
	g, err := netip.ParseAddrPort(group)
	if err != nil || !g.Addr().IsMulticast() || iface == "" {
		return fmt.Errorf("%w: announce group %q on interface %q: want a multicast addr:port and an interface", ErrContract, group, iface)
	}
	sock, err := udp.Open(udp.SocketConfig{Group: g, Interface: iface})
	if err != nil {
		return fmt.Errorf("announce listen %s on %s: %w", group, iface, err)
	}
	defer sock.Close()
	err = udp.ListenAnnounces(ctx, sock, func(from netip.AddrPort, a *udp.Announce) {
		node := a.NodeName()
		for i := 0; i < a.N; i++ {
			e := &a.Entries[i]
			role := "publisher"
			if e.Role == udp.RoleSubscriber {
				role = "subscriber"
			}
			u := UDPAnnounce{From: from, Role: role, Topic: e.TopicName(), Node: node, Port: e.Port, Epoch: e.Epoch,
				NodeEpoch: a.NodeEpoch, Entries: a.N}
			if e.Addr != [4]byte{} {
				u.Addr = netip.AddrFrom4(e.Addr)
			}
			fn(u)
		}
	})
	return err
}

// udpFaultOf is o's fault layer configuration; nil for nil options.
func udpFaultOf(o *PublisherOptions) *UDPFault {
	if o == nil {
		return nil
	}
	return o.UDPFault
}
