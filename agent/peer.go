package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/linkstate"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// Peer is a middleware other than hilrig's own that endpoints can run on
// (Start.Middleware). The implementations are cgo packages under peers/,
// linked only into the peer agent binary (cmd/hilrig-peer) and registered
// in Options.Peers; the default hilrig binary has none.
//
// A peer message carries the in-band header of agentproto.PeerHeaderBytes;
// the writer stamps it, the reader stamps the receive time, both in the
// peer's own thread of control as close to the peer's call as the adapter
// can get (in C, around the peer's write and wait calls).
type Peer interface {
	// Describe is one line for the report beside every case: the peer's
	// version, its low-latency configuration and the transport it really
	// uses ("cyclonedds 0.10.2, UDP on lo, no SHM, ...").
	Describe() string
	// NewWriter opens a writer on topic: reliable (else best effort),
	// keep-last depth, messages up to maxPayload bytes.
	NewWriter(topic string, reliable bool, depth, maxPayload int) (PeerWriter, error)
	// NewReader opens a reader on topic with the same QoS; spin makes Take
	// poll instead of sleeping in the peer's wait call.
	NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (PeerReader, error)
	// Close releases what the peer opened for this agent (participant,
	// runtime); it is called once, when the agent stops.
	Close() error
}

// PeerWriter is one writer of a peer. Not safe for concurrent use.
type PeerWriter interface {
	// Write writes len(payload) bytes, first stamping into payload seq
	// ([0:8)), CLOCK_MONOTONIC ns ([8:16)) and clock's ns ([16:24), a
	// Linux clock id) immediately before the peer's write call. It blocks
	// as the peer's write does (reliable with a full history: until the
	// reader acknowledges or the peer's blocking time ends, then an error
	// matching os.ErrDeadlineExceeded).
	// Allocates nothing on the Go side.
	Write(payload []byte, seq uint64, clock int32) error
	Close() error
}

// PeerMatcher is implemented by peer writers and readers that know their
// matched counterparts: the agent waits for a publisher's first matched
// reader before it sends, as a hilrig subscriber's started ack guarantees
// it sees every later message; a pinger also waits for its reply reader
// to match the echo's reply writer (the echo cannot wait: it starts
// first). Matched does not block.
type PeerMatcher interface {
	Matched() (int, error)
}

// PeerReader is one reader of a peer. Not safe for concurrent use.
type PeerReader interface {
	// Take waits up to timeout for the next message and returns its bytes,
	// valid until Release, and recvMono: CLOCK_MONOTONIC ns stamped the
	// moment the peer handed the message over (before it is read). On a
	// timeout data is nil and err nil. Allocates nothing on the Go side.
	Take(timeout time.Duration) (data []byte, recvMono int64, err error)
	// Release returns the message of the last Take to the peer.
	Release()
	Close() error
}

// PeerROS2 is implemented by DDS peers that speak ROS 2 (issue 33): a
// writer or reader on a DDS topic of a ROS 2 type name carrying the
// type's XCDR1 encoding as is (encapsulation header included), unkeyed,
// with no type information registered (matching by type name), with the
// QoS of a ROS 2 profile: reliable or best effort, keep-last depth,
// volatile. The writer's Write stamps the message's header stamp
// (rostopic.StampOffset) on clock immediately before the peer's write
// call and ignores seq (a ROS 2 message has no place for it).
type PeerROS2 interface {
	NewROS2Writer(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (PeerWriter, error)
	NewROS2Reader(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (PeerReader, error)
}

// PeerForwarder is implemented by the ROS 2 writers of PeerROS2: Forward
// writes a message as it is, its header stamp untouched (a bridge
// forwarding another bus's message). Allocates nothing on the Go side.
type PeerForwarder interface {
	Forward(payload []byte) error
}

// ErrNoROS2: the peer an endpoint asked for does not speak ROS 2.
var ErrNoROS2 = errors.New("agent: peer does not speak ROS 2")

// peerPoll bounds one Take so a reader notices its context ending.
const peerPoll = 20 * time.Millisecond

// outlet is what the roles publish through: hilrig's publisher or a peer
// writer. hdr is the in-band header the roles leave at the start of the
// payload (0 for hilrig).
type outlet interface {
	// send publishes len(buf) bytes as message seq. No allocation.
	send(buf []byte, seq uint64) error
	hdr() int
	close()
}

// inlet is what the roles receive through: hilrig's subscriber or a peer
// reader; fn sees the message's payload past the in-band header.
type inlet interface {
	receive(ctx context.Context, fn func(*middleware.Message) error) error
	close()
}

type hilrigOut struct {
	pub  *middleware.Publisher
	path agentproto.SendPath
}

func (o hilrigOut) send(buf []byte, seq uint64) error { return sendNumbered(o.pub, o.path, buf, seq) }
func (hilrigOut) hdr() int                            { return 0 }
func (o hilrigOut) close()                            { o.pub.Close() }

type hilrigIn struct{ sub *middleware.Subscriber }

func (i hilrigIn) receive(ctx context.Context, fn func(*middleware.Message) error) error {
	return i.sub.Receive(ctx, fn)
}
func (i hilrigIn) close() { i.sub.Close() }

// peerOut writes through a peer writer, stamping on clock.
type peerOut struct {
	w     PeerWriter
	clock int32
	// epoch is this writer's publisher epoch (newPeerEpoch): a restarted
	// publisher's sequence starts at 1 again under a new epoch, which its
	// readers tell from a late duplicate of the old one.
	epoch uint16
}

// peerEpochs hands out publisher epochs: random start per process (a
// restarted agent does not repeat its predecessor's), +1 per writer (a
// publisher restarted inside one agent never repeats the one it replaces).
var peerEpochs = func() *atomic.Uint32 {
	var v atomic.Uint32
	v.Store(uint32(rand.Uint64()))
	return &v
}()

func newPeerEpoch() uint16 { return uint16(peerEpochs.Add(1)) }

// send writes one message; a peer's blocking limit (an error matching
// os.ErrDeadlineExceeded) counts as middleware.ErrTimeout, as hilrig's.
// seq must be below 2^48 (agentproto.PeerSeqBits): 8.9 years at 1 MHz.
func (o *peerOut) send(buf []byte, seq uint64) error {
	err := o.w.Write(buf, agentproto.PeerSeqWord(o.epoch, seq), o.clock)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return middleware.ErrTimeout
	}
	return err
}
func (*peerOut) hdr() int { return agentproto.PeerHeaderBytes }
func (o *peerOut) close() { o.w.Close() }

// peerIn turns peer messages into middleware.Messages: the in-band header
// becomes the Header, the rest the Payload, and a sequence gap the Lost
// count (as hilrig's subscriber counts it).
type peerIn struct {
	r PeerReader
	// cpu and prio pin and prioritise the receiving thread (hilrig's
	// subscriber does the same in its own receive thread).
	cpu  *int
	prio int
	// lateJoin: the stream ran before this reader (Start.LateJoin), so
	// the messages before its first are not its loss.
	lateJoin bool
	// ros: the messages are a ROS 2 topic's (deliverROS), stamped on
	// clock; n numbers them in arrival order.
	ros   bool
	clock int32
	n     uint64
	m     middleware.Message // reused: the hot path allocates nothing
	// The current epoch and its last sequence; prev is the epoch it
	// replaced, whose stragglers are delivered but never switch back.
	epoch, prev      uint16
	started, hasPrev bool
	lastSeq          uint64
}

func (i *peerIn) close() { i.r.Close() }

// receive calls fn for every message until ctx ends (nil), fn fails (its
// error) or the peer fails.
func (i *peerIn) receive(ctx context.Context, fn func(*middleware.Message) error) error {
	if i.cpu != nil || i.prio > 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if i.cpu != nil {
			if err := sys.PinThread(*i.cpu); err != nil {
				return err
			}
		}
		if i.prio > 0 {
			if err := sys.SetFIFO(i.prio); err != nil {
				return err
			}
		}
	}
	for ctx.Err() == nil {
		data, recv, err := i.r.Take(peerPoll)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		if i.ros {
			err = i.deliverROS(data, recv, fn)
		} else {
			err = i.deliver(data, recv, fn)
		}
		i.r.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// deliver decodes one peer message and hands it to fn. 0 allocs.
func (i *peerIn) deliver(data []byte, recv int64, fn func(*middleware.Message) error) error {
	if len(data) < agentproto.PeerHeaderBytes {
		return fmt.Errorf("peer message of %d bytes, shorter than the %d-byte in-band header", len(data), agentproto.PeerHeaderBytes)
	}
	m := &i.m
	epoch, seq := agentproto.SplitPeerSeqWord(binary.LittleEndian.Uint64(data[0:8]))
	m.Header.Epoch = uint32(epoch)
	m.Header.Seq = seq
	m.Header.SendMono = int64(binary.LittleEndian.Uint64(data[8:16]))
	m.Header.SendClock = int64(binary.LittleEndian.Uint64(data[16:24]))
	m.Header.Len = uint32(len(data))
	m.RecvMono = recv
	m.Lost = 0
	switch {
	case i.started && epoch == i.epoch:
		if seq > i.lastSeq {
			m.Lost = seq - i.lastSeq - 1
			i.lastSeq = seq
		}
	case i.hasPrev && epoch == i.prev:
		// A straggler of the replaced publisher: delivered, not counted.
	default:
		// The first message, or a restarted publisher's first: a writer
		// sends only once a reader matched, so what came before it is
		// loss — except before a late-joining reader's first message.
		lost := seq - 1
		if i.started {
			i.prev, i.hasPrev = i.epoch, true
		} else if i.lateJoin {
			lost = 0
		}
		i.epoch, i.started, i.lastSeq = epoch, true, seq
		m.Lost = lost
	}
	m.Payload = data[agentproto.PeerHeaderBytes:]
	return fn(m)
}

// deliverROS hands one ROS 2 message to fn: the header stamp (on i.clock)
// becomes SendClock and, less the clock's offset from CLOCK_MONOTONIC read
// now (one kernel: the offset does not change between the two ends'
// reads), SendMono; the arrival count is the sequence (agentproto's ROS 2
// note); the whole message is the Payload. 0 allocs.
func (i *peerIn) deliverROS(data []byte, recv int64, fn func(*middleware.Message) error) error {
	stamp, ok := rostopic.Stamp(data)
	if !ok {
		return fmt.Errorf("ROS 2 message of %d bytes: no valid header stamp at bytes %d..%d", len(data), rostopic.StampOffset, rostopic.StampOffset+rostopic.StampBytes)
	}
	offset := int64(0)
	if i.clock != sys.ClockMonotonic {
		offset = clockOffset(i.clock)
	}
	i.n++
	m := &i.m
	m.Header.Epoch = 0
	m.Header.Seq = i.n
	m.Header.SendClock = stamp
	m.Header.SendMono = stamp - offset
	m.Header.Len = uint32(len(data))
	m.RecvMono = recv
	m.Lost = 0
	m.Payload = data
	return fn(m)
}

// clockOffset is clock − CLOCK_MONOTONIC now, read between two monotonic
// reads and retried while they lie more than 1 µs apart (the thread was
// preempted between the reads, which would shift every latency of the
// message by the preemption: seen as negative latencies at 1 µs
// in-process delivery on a loaded machine). 0 allocs.
func clockOffset(clock int32) int64 {
	var off int64
	for range 8 {
		a := sys.Now(sys.ClockMonotonic)
		c := sys.Now(clock)
		b := sys.Now(sys.ClockMonotonic)
		off = c - (a + (b-a)/2)
		if b-a < 1000 {
			break
		}
	}
	return off
}

// rosOut writes one ROS 2 message, encoded once (rostopic.Template), for
// every send: the writer stamps its header; buf is not sent.
type rosOut struct {
	w     PeerWriter
	msg   []byte
	clock int32
}

func (o *rosOut) send(_ []byte, seq uint64) error {
	err := o.w.Write(o.msg, seq, o.clock)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return middleware.ErrTimeout
	}
	return err
}
func (*rosOut) hdr() int { return 0 }
func (o *rosOut) close() { o.w.Close() }

// rosCodec is the codec of a ROS 2 topic's type, from the shipped
// definitions.
func rosCodec(t *rostopic.Topic) (*rosmsg.Codec, error) {
	reg, err := rosmsg.Shipped()
	if err != nil {
		return nil, err
	}
	c, err := reg.Codec(t.Type)
	if err != nil {
		return nil, fmt.Errorf("ros2 topic %s: %w (the agent knows the shipped types: %v)", t.Name, err, rosmsg.ShippedNames())
	}
	return c, nil
}

// rosMessage is the message x sends on its ROS 2 topic: the topic's type
// encoded to Payload bytes (rostopic.Template), built once at start.
func (x endpoints) rosMessage() ([]byte, error) {
	t := x.s.ROS2
	c, err := rosCodec(t)
	if err != nil {
		return nil, err
	}
	msg, err := rostopic.Template(c, x.s.Payload)
	if err != nil {
		return nil, fmt.Errorf("ros2 topic %s: %w", t.Name, err)
	}
	return msg, nil
}

// rosPeer is x's peer as a ROS 2 speaker.
func (x endpoints) rosPeer() (PeerROS2, error) {
	rp, ok := x.peer.(PeerROS2)
	if !ok {
		return nil, fmt.Errorf("%s: %w", x.s.Middleware, ErrNoROS2)
	}
	return rp, nil
}

// rosOut opens a ROS 2 writer for the endpoint's topic and encodes the
// message it sends, Payload bytes.
func (x endpoints) rosOut() (outlet, error) {
	t := x.s.ROS2
	msg, err := x.rosMessage()
	if err != nil {
		return nil, err
	}
	rp, err := x.rosPeer()
	if err != nil {
		return nil, err
	}
	w, err := rp.NewROS2Writer(t.DDSTopic(), t.DDSType(), t.Profile.Reliable(), t.Profile.Depth(), x.s.Contract.MaxPayload)
	if err != nil {
		return nil, fmt.Errorf("%s ros2 writer %s: %w", x.s.Middleware, t, err)
	}
	return &rosOut{w: w, msg: msg, clock: stampClockID(x.s.Stamp)}, nil
}

// rosIn opens a ROS 2 reader for the endpoint's topic.
func (x endpoints) rosIn() (inlet, error) {
	s, t := x.s, x.s.ROS2
	if _, err := rosCodec(t); err != nil {
		return nil, err
	}
	rp, err := x.rosPeer()
	if err != nil {
		return nil, err
	}
	r, err := rp.NewROS2Reader(t.DDSTopic(), t.DDSType(), t.Profile.Reliable(), t.Profile.Depth(), s.Contract.MaxPayload, s.Wait == middleware.WaitSpin)
	if err != nil {
		return nil, fmt.Errorf("%s ros2 reader %s: %w", s.Middleware, t, err)
	}
	return &peerIn{r: r, cpu: s.CPU, prio: s.Priority, ros: true, clock: stampClockID(s.Stamp)}, nil
}

// endpoints opens an endpoint's topics on hilrig's node or on its peer.
type endpoints struct {
	node *middleware.Node // hilrig's, or nil
	peer Peer             // or the peer's
	s    *agentproto.Start
	// stages records the stage stamps of a hilrig publisher or
	// subscriber (Start.Stages); nil: the middleware's hooks stay nil.
	stages *stageRec
}

// out opens a publisher (hilrig, sending on path) or a peer writer.
func (x endpoints) out(c middleware.Contract, path agentproto.SendPath) (outlet, error) {
	if x.peer != nil && x.s.ROS2 != nil {
		return x.rosOut()
	}
	if x.s.ROS2 != nil {
		return x.rosHilrigOut(c)
	}
	if x.peer != nil {
		w, err := x.peer.NewWriter(c.Topic, c.Reliability == middleware.Reliable, c.Depth, c.MaxPayload)
		if err != nil {
			return nil, fmt.Errorf("%s writer: %w", x.s.Middleware, err)
		}
		return &peerOut{w: w, clock: stampClockID(x.s.Stamp), epoch: newPeerEpoch()}, nil
	}
	po := &middleware.PublisherOptions{SendTimeout: time.Duration(x.s.SendTimeoutNs)}
	if x.stages != nil {
		po.Stages = x.stages.publish
	}
	pub, err := x.node.NewPublisher(c, po)
	if err != nil {
		return nil, err
	}
	return hilrigOut{pub: pub, path: path}, nil
}

// in opens a subscriber (hilrig) or a peer reader, with the endpoint's
// wait strategy (spin polls on a peer; futex and hybrid sleep in the
// peer's own wait call).
func (x endpoints) in(c middleware.Contract) (inlet, error) {
	s := x.s
	if x.peer != nil && s.ROS2 != nil {
		return x.rosIn()
	}
	if s.ROS2 != nil {
		return x.rosHilrigIn(c)
	}
	if x.peer != nil {
		r, err := x.peer.NewReader(c.Topic, c.Reliability == middleware.Reliable, c.Depth, c.MaxPayload, s.Wait == middleware.WaitSpin)
		if err != nil {
			return nil, fmt.Errorf("%s reader: %w", s.Middleware, err)
		}
		return &peerIn{r: r, cpu: s.CPU, prio: s.Priority, lateJoin: s.LateJoin}, nil
	}
	so := &middleware.SubscriberOptions{Wait: s.Wait, CPU: s.CPU, Priority: s.Priority}
	if x.stages != nil {
		so.Stages = x.stages.receive
	}
	sub, err := x.node.NewSubscriber(c, so)
	if err != nil {
		return nil, err
	}
	return hilrigIn{sub: sub}, nil
}

// stampClockID is Start.Stamp's Linux clock id.
func stampClockID(stamp string) int32 {
	switch stamp {
	case "tai":
		return sys.ClockTAI
	case "monotonic":
		return sys.ClockMonotonic
	}
	return sys.ClockRealtime
}

// peerLinkWait bounds how long a peer's start waits for the interface of
// its PeerNet.Address to run. A variable for the tests only.
var peerLinkWait = 10 * time.Second

// awaitPeerLink returns once net's address (if any) is on an interface of
// this board that is up and running, or an error after peerLinkWait naming
// the address, the interface and its state. A DDS started earlier does
// not fail: Fast DDS drops an interface that is not running from its
// allow-list ("All whitelist interfaces were filtered out") and runs with
// no network, so its endpoints match nothing and a ping-pong waits for
// replies that cannot come (CI: TestDDSConfinementVeth, right after the
// veth came up). Blocks; honours ctx.
func awaitPeerLink(ctx context.Context, net *agentproto.PeerNet) error {
	if net == nil || net.Address == "" {
		return nil
	}
	addr, err := netip.ParseAddr(net.Address)
	if err != nil {
		return fmt.Errorf("peer_net.address %q: %w", net.Address, err)
	}
	ctx, cancel := context.WithTimeout(ctx, peerLinkWait)
	defer cancel()
	if _, err := linkstate.AwaitAddr(ctx, addr); err != nil {
		return fmt.Errorf("peer_net.address: %w", err)
	}
	return nil
}

// ErrNoPeer: the agent was not built with the peer an endpoint asked for.
var ErrNoPeer = errors.New("agent: peer middleware not available")

// peer returns the agent's instance of the named peer on net, opening it
// on first use (one participant or runtime per agent process and network). Safe for
// concurrent use. Errors name the board and the peer.
func (a *agent) peer(name string, net *agentproto.PeerNet) (Peer, error) {
	a.peersMu.Lock()
	defer a.peersMu.Unlock()
	key := name + "@" + net.Key()
	if p, ok := a.peers[key]; ok {
		return p, nil
	}
	p, err := a.openPeer(name, net)
	if err != nil {
		return nil, err
	}
	a.keepPeer(key, p)
	return p, nil
}

// keepPeer makes p the agent's instance for key. Called with peersMu held.
func (a *agent) keepPeer(key string, p Peer) {
	if a.peers == nil {
		a.peers = map[string]Peer{}
	}
	a.peers[key] = p
}

// PeerProcessWide is implemented by a peer whose instance is the
// process's one runtime (iceoryx): it cannot be opened again per endpoint,
// and closing it ends it for the whole process.
type PeerProcessWide interface {
	ProcessWide() bool
}

// PeerShmFiles is implemented by a peer that keeps shared-memory files a
// killed process leaves behind (Fast DDS): the started message lists them
// (agentproto.Started.PeerShm) so the controller can remove them on the
// board after a kill.
type PeerShmFiles interface {
	ShmFiles() ([]string, error)
}

func processWide(p Peer) bool {
	pw, ok := p.(PeerProcessWide)
	return ok && pw.ProcessWide()
}

// coldPeer opens an instance of the named peer for one endpoint
// (Start.ColdPeer): cold is true when the caller owns it and closes it
// when the endpoint ends. A process-wide peer is shared instead (cold
// false), and becomes the agent's instance. Safe for concurrent use.
func (a *agent) coldPeer(name string, net *agentproto.PeerNet) (p Peer, cold bool, err error) {
	a.peersMu.Lock()
	defer a.peersMu.Unlock()
	key := name + "@" + net.Key()
	if p, ok := a.peers[key]; ok && processWide(p) {
		return p, false, nil
	}
	if p, err = a.openPeer(name, net); err != nil {
		return nil, false, err
	}
	if !processWide(p) {
		return p, true, nil
	}
	// The process's runtime, opened here first: it becomes the agent's
	// (it may own the RouDi it started), and later cold starts share it.
	a.keepPeer(key, p)
	return p, false, nil
}

// openPeer opens a new instance of the named peer on net through its
// opener. Errors name the board and the peer.
func (a *agent) openPeer(name string, net *agentproto.PeerNet) (Peer, error) {
	open, ok := a.opts.Peers[name]
	if !ok {
		have := make([]string, 0, len(a.opts.Peers))
		for n := range a.opts.Peers {
			have = append(have, n)
		}
		slices.Sort(have)
		return nil, fmt.Errorf("board %q: %w: %q (this agent, %s, has %v)", a.opts.Board, ErrNoPeer, name, a.opts.Build, have)
	}
	var n agentproto.PeerNet
	if net != nil {
		n = *net
	}
	p, err := open(a.opts.Board, n)
	if err != nil {
		return nil, fmt.Errorf("board %q: peer %s: %w", a.opts.Board, name, err)
	}
	return p, nil
}

// closePeers closes every opened peer (after every endpoint ended).
func (a *agent) closePeers() {
	a.peersMu.Lock()
	defer a.peersMu.Unlock()
	for name, p := range a.peers {
		if err := p.Close(); err != nil {
			a.opts.Logger.Warn("closing peer", "peer", name, "err", err)
		}
		delete(a.peers, name)
	}
}

// peerOf is a peer adapter's concrete API: the methods of Peer with the
// adapter's own writer and reader types.
type peerOf[W PeerWriter, R PeerReader] interface {
	Describe() string
	NewWriter(topic string, reliable bool, depth, maxPayload int) (W, error)
	NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (R, error)
	Close() error
}

// rosPeerOf is a DDS adapter's ROS 2 API, with its writer and reader types.
type rosPeerOf[W PeerWriter, R PeerReader] interface {
	NewROS2Writer(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (W, error)
	NewROS2Reader(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (R, error)
}

// NewROS2Writer forwards the adapter's ROS 2 writer; ErrNoROS2 without one.
func (a adapted[W, R]) NewROS2Writer(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (PeerWriter, error) {
	rp, ok := any(a.p).(rosPeerOf[W, R])
	if !ok {
		return nil, ErrNoROS2
	}
	w, err := rp.NewROS2Writer(ddsTopic, ddsType, reliable, depth, maxPayload)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// NewROS2Reader forwards the adapter's ROS 2 reader; ErrNoROS2 without one.
func (a adapted[W, R]) NewROS2Reader(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (PeerReader, error) {
	rp, ok := any(a.p).(rosPeerOf[W, R])
	if !ok {
		return nil, ErrNoROS2
	}
	r, err := rp.NewROS2Reader(ddsTopic, ddsType, reliable, depth, maxPayload, spin)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// AdaptPeer turns a peer adapter (peers/…: concrete writer and reader
// types) into a Peer.
func AdaptPeer[W PeerWriter, R PeerReader](p peerOf[W, R]) Peer { return adapted[W, R]{p} }

type adapted[W PeerWriter, R PeerReader] struct{ p peerOf[W, R] }

func (a adapted[W, R]) Describe() string { return a.p.Describe() }
func (a adapted[W, R]) Close() error     { return a.p.Close() }

// ShmFiles forwards the adapter's PeerShmFiles; none without it.
func (a adapted[W, R]) ShmFiles() ([]string, error) {
	if f, ok := any(a.p).(PeerShmFiles); ok {
		return f.ShmFiles()
	}
	return nil, nil
}

// ProcessWide forwards the adapter's PeerProcessWide, if it has one.
func (a adapted[W, R]) ProcessWide() bool {
	pw, ok := any(a.p).(PeerProcessWide)
	return ok && pw.ProcessWide()
}
func (a adapted[W, R]) NewWriter(topic string, reliable bool, depth, maxPayload int) (PeerWriter, error) {
	w, err := a.p.NewWriter(topic, reliable, depth, maxPayload)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return w, nil
}
func (a adapted[W, R]) NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (PeerReader, error) {
	r, err := a.p.NewReader(topic, reliable, depth, maxPayload, spin)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// peerMatchWait bounds the wait for a peer writer's first matched reader.
const peerMatchWait = 10 * time.Second

// awaitMatch polls x (a peer writer or reader) until it matched its
// first counterpart, ctx ends or peerMatchWait passes, and returns how
// long it waited (ns), -1 if nothing matched (an endpoint may have none
// and still starts).
func awaitMatch(ctx context.Context, x any) (int64, error) {
	m, ok := x.(PeerMatcher)
	if !ok {
		return 0, nil
	}
	begin := time.Now()
	deadline := begin.Add(peerMatchWait)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		n, err := m.Matched()
		if err != nil {
			return 0, err
		}
		if n > 0 {
			return time.Since(begin).Nanoseconds(), nil
		}
		if time.Now().After(deadline) {
			return -1, nil
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// rosHilrigOut publishes one ROS 2 message, encoded once
// (rostopic.Template), on hilrig's bus for every send: the bus side of
// `hilrig bridge` (agentproto's ROS 2 note). The header stamp is written
// on clock right before Send, as the peers' C code stamps before its
// write; hilrig's own frame carries the sequence. 0 allocs per send.
type rosHilrigOut struct {
	pub   *middleware.Publisher
	msg   []byte
	clock int32
}

func (o *rosHilrigOut) send(_ []byte, _ uint64) error {
	if err := rostopic.PutStamp(o.msg, sys.Now(o.clock)); err != nil {
		return err
	}
	return o.pub.Send(o.msg)
}
func (*rosHilrigOut) hdr() int { return 0 }
func (o *rosHilrigOut) close() { o.pub.Close() }

func (x endpoints) rosHilrigOut(c middleware.Contract) (outlet, error) {
	msg, err := x.rosMessage()
	if err != nil {
		return nil, err
	}
	pub, err := x.node.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: time.Duration(x.s.SendTimeoutNs)})
	if err != nil {
		return nil, err
	}
	return &rosHilrigOut{pub: pub, msg: msg, clock: stampClockID(x.s.Stamp)}, nil
}

// rosHilrigIn receives ROS 2 messages on hilrig's bus: the header stamp
// (on clock) replaces the frame's send stamps, as peerIn.deliverROS does
// for a DDS reader, so the latency runs from the message's origin however
// many hops (a bridge) it took; hilrig's frame keeps the sequence and
// the loss count. 0 allocs per message.
type rosHilrigIn struct {
	sub   *middleware.Subscriber
	clock int32
}

func (i rosHilrigIn) receive(ctx context.Context, fn func(*middleware.Message) error) error {
	return i.sub.Receive(ctx, func(m *middleware.Message) error {
		stamp, ok := rostopic.Stamp(m.Payload)
		if !ok {
			return fmt.Errorf("ROS 2 message of %d bytes on hilrig's bus: no valid header stamp at bytes %d..%d", len(m.Payload), rostopic.StampOffset, rostopic.StampOffset+rostopic.StampBytes)
		}
		offset := int64(0)
		if i.clock != sys.ClockMonotonic {
			offset = clockOffset(i.clock)
		}
		m.Header.SendClock = stamp
		m.Header.SendMono = stamp - offset
		return fn(m)
	})
}
func (i rosHilrigIn) close() { i.sub.Close() }

func (x endpoints) rosHilrigIn(c middleware.Contract) (inlet, error) {
	s := x.s
	if _, err := rosCodec(s.ROS2); err != nil {
		return nil, err
	}
	sub, err := x.node.NewSubscriber(c, &middleware.SubscriberOptions{Wait: s.Wait, CPU: s.CPU, Priority: s.Priority})
	if err != nil {
		return nil, err
	}
	return rosHilrigIn{sub: sub, clock: stampClockID(s.Stamp)}, nil
}
