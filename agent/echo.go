package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// The round-trip roles (agentproto.Pinger, agentproto.Echo). The pinger
// measures RTT on its own CLOCK_MONOTONIC: the echo copies the ping
// header's Seq and SendMono (stamped by the middleware on the pinger's
// host at the entry of Send/Publish) into the reply, and the pinger
// subtracts that stamp from the reply's RecvMono (stamped by the
// middleware on the pinger's host when its subscriber took the reply).

// recordsLatency reports whether the endpoint's windows and final carry a
// latency histogram: a subscriber's one-way latency or a pinger's RTT.
func (e *endpoint) recordsLatency() bool {
	return e.s.Role == agentproto.Subscriber || e.s.Role == agentproto.Pinger
}

// openRoundTrip opens both topics of a pinger or echo and returns the
// endpoint's loop and the closer of what it opened.
func (e *endpoint) openRoundTrip(ends endpoints, mk Marker) (func() error, func(), error) {
	s := e.s
	if s.Role == agentproto.Echo {
		sub, err := ends.in(s.Contract)
		if err != nil {
			return nil, nil, fmt.Errorf("echo: subscriber on %q: %w", s.Contract.Topic, err)
		}
		// The echo copies each ping into its buffer: always the copy path.
		pub, err := ends.out(s.Echo.Reply, agentproto.SendCopy)
		if err != nil {
			sub.close()
			return nil, nil, fmt.Errorf("echo: reply publisher on %q: %w", s.Echo.Reply.Topic, err)
		}
		h := pub.hdr()
		ec := &echoer{e: e, sub: sub, pub: pub, mk: mk, hdr: h, buf: make([]byte, max(s.Echo.Reply.MaxPayload, h+agentproto.PingHeaderBytes))}
		return ec.run, func() { pub.close(); sub.close() }, nil
	}
	// The reply subscriber is attached before the first ping can leave.
	sub, err := ends.in(s.Echo.Reply)
	if err != nil {
		return nil, nil, fmt.Errorf("pinger: reply subscriber on %q: %w", s.Echo.Reply.Topic, err)
	}
	pub, err := ends.out(s.Contract, s.Send)
	if err != nil {
		sub.close()
		return nil, nil, fmt.Errorf("pinger: publisher on %q: %w", s.Contract.Topic, err)
	}
	if err := e.awaitReader(pub, sub); err != nil {
		pub.close()
		sub.close()
		return nil, nil, fmt.Errorf("pinger: %w", err)
	}
	p := &pinger{e: e, pub: pub, mk: mk, replyCh: make(chan struct{}, 1)}
	return func() error { return p.run(sub) }, func() { pub.close(); sub.close() }, nil
}

// errBadReply: a reply this pinger cannot have caused (too short, an
// unsent sequence number, a stamp from another clock). It fails the
// endpoint: its samples could not be trusted.
var errBadReply = errors.New("pinger: bad reply")

// echoer republishes every ping on the reply topic.
type echoer struct {
	e   *endpoint
	sub inlet
	pub outlet
	mk  Marker
	// hdr is the outlet's in-band header: the reply's own bytes (the
	// echoed Seq and SendMono, then the ping's payload) start there.
	hdr int
	buf []byte // the reply, reused: the hot path allocates nothing
}

// run echoes until Count pings, the duration or a stop. After Count it
// keeps the reply publisher open for defaultLinger (UDP NACKs of the last
// replies) unless stopped first.
func (ec *echoer) run() error {
	e := ec.e
	err := ec.sub.receive(e.ctx, ec.onPing)
	if errors.Is(err, errCount) {
		t := time.NewTimer(defaultLinger)
		defer t.Stop()
		select {
		case <-e.ctx.Done():
		case <-t.C:
		}
		return nil
	}
	if e.ctx.Err() != nil {
		return context.Cause(e.ctx)
	}
	if err == nil {
		err = errors.New("echo: subscriber ended")
	}
	return err
}

// onPing is the echo's hot path: copy the ping, stamp the ping's Seq and
// SendMono into the first agentproto.PingHeaderBytes, send it back.
// 0 allocs (TestOnPingAllocs).
func (ec *echoer) onPing(m *middleware.Message) error {
	e := ec.e
	h := ec.hdr
	n := h + max(copy(ec.buf[h:], m.Payload), agentproto.PingHeaderBytes)
	binary.LittleEndian.PutUint64(ec.buf[h:h+8], m.Header.Seq)
	binary.LittleEndian.PutUint64(ec.buf[h+8:h+16], uint64(m.Header.SendMono))
	if ec.mk != nil {
		if err := ec.mk.Mark(); err != nil {
			return fmt.Errorf("marker: %w", err)
		}
		e.marks++
	}
	err := ec.pub.send(ec.buf[:n], m.Header.Seq)
	replied := uint64(1)
	switch {
	case err == nil:
	case errors.Is(err, middleware.ErrTimeout):
		// The pinger counts the missing reply as lost by its sequence.
		e.timeouts++
		replied = 0
	default:
		return fmt.Errorf("echo: reply to ping %d: %w", m.Header.Seq, err)
	}
	e.mu.Lock()
	e.winRecv++
	e.winLost += m.Lost
	e.winSent += replied
	e.mu.Unlock()
	e.recv++
	e.lost += m.Lost
	e.sent += replied
	if m.Header.Seq > e.lastSeq {
		e.lastSeq = m.Header.Seq
	}
	if e.firstNs == 0 {
		e.firstNs = m.RecvMono
	}
	e.lastNs = m.RecvMono
	e.lastRecvMono.Store(m.RecvMono)
	if c := e.s.Count; c > 0 && m.Header.Seq >= c {
		return errCount
	}
	return nil
}

// pinger sends pings and matches replies.
type pinger struct {
	e   *endpoint
	pub outlet
	mk  Marker
	// sentSeq is the header Seq of the last ping sent (the k-th successful
	// send carries Seq k); replied the highest Seq answered. Atomics: the
	// send loop and the receive goroutine both read them.
	sentSeq atomic.Uint64
	replied atomic.Uint64
	// replyCh wakes a back-to-back send loop (capacity 1, never blocks).
	replyCh chan struct{}
	// wait is the send loop's reply timer, reused for every ping.
	wait *time.Timer
	// stale counts replies at or below the last one matched (duplicates
	// or reordering); they are not recorded.
	stale uint64
}

// onReply is the pinger's hot path: match the reply by its echoed Seq,
// record RTT = RecvMono − echoed SendMono (both this host's
// CLOCK_MONOTONIC), count the sequence gap as lost. 0 allocs
// (TestOnReplyAllocs).
func (p *pinger) onReply(m *middleware.Message) error {
	e := p.e
	if len(m.Payload) < agentproto.PingHeaderBytes {
		return fmt.Errorf("%w: reply of %d bytes, want at least %d", errBadReply, len(m.Payload), agentproto.PingHeaderBytes)
	}
	seq := binary.LittleEndian.Uint64(m.Payload[0:8])
	sentAt := int64(binary.LittleEndian.Uint64(m.Payload[8:16]))
	if seq == 0 || seq > p.sentSeq.Load() {
		return fmt.Errorf("%w: reply to ping %d, but only %d were sent", errBadReply, seq, p.sentSeq.Load())
	}
	rtt := m.RecvMono - sentAt
	if rtt <= 0 {
		return fmt.Errorf("%w: reply to ping %d received at %d ns, before its send stamp %d ns (not this pinger's clock)", errBadReply, seq, m.RecvMono, sentAt)
	}
	last := e.lastSeq
	if seq <= last {
		p.stale++
		return nil
	}
	gap := seq - last - 1
	e.mu.Lock()
	if seq > e.s.WarmUp {
		e.win.Record(rtt)
	}
	e.winRecv++
	e.winLost += gap
	e.mu.Unlock()
	e.recv++
	e.lost += gap
	e.lastSeq = seq
	if e.firstNs == 0 {
		e.firstNs = m.RecvMono
	}
	e.lastNs = m.RecvMono
	e.lastRecvMono.Store(m.RecvMono)
	p.replied.Store(seq)
	select {
	case p.replyCh <- struct{}{}:
	default:
	}
	return nil
}

// run receives replies on a goroutine of its own and sends pings until
// Count, the duration, a stop or a receive error; then it waits up to the
// reply timeout for the last replies and counts the missing ones lost.
func (p *pinger) run(sub inlet) error {
	e := p.e
	s := e.s
	timeout := time.Duration(s.Echo.ReplyTimeoutNs)
	if timeout == 0 {
		timeout = time.Duration(agentproto.DefaultReplyTimeoutNs)
	}
	p.wait = time.NewTimer(time.Hour)
	defer p.wait.Stop()
	// endpoint.run locked this goroutine's thread when CPU or Priority is
	// set (it pins only publishers): the pinger's send loop is pinned here.
	if s.CPU != nil {
		if err := sys.PinThread(*s.CPU); err != nil {
			return fmt.Errorf("pinger: %w", err)
		}
	}
	if s.Priority > 0 {
		if err := sys.SetFIFO(s.Priority); err != nil {
			return fmt.Errorf("pinger: %w", err)
		}
	}
	// Replies are received until the pings in flight are answered, even
	// past the end of a duration; sending stops with the endpoint (or when
	// receiving failed).
	rctx, stopRecv := context.WithCancelCause(context.Background())
	defer stopRecv(nil)
	sctx, stopSend := context.WithCancelCause(e.ctx)
	defer stopSend(nil)
	var (
		wg      sync.WaitGroup
		recvErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := sub.receive(rctx, p.onReply)
		if rctx.Err() == nil { // not asked to stop: a real failure
			if err == nil {
				err = errors.New("reply subscriber ended")
			}
			recvErr = err
			stopSend(err)
			stopRecv(err)
		}
	}()
	sendErr := p.send(sctx, timeout)
	if sendErr == nil || errors.Is(context.Cause(e.ctx), errDuration) {
		// Rate-paced pings, the one in flight when the duration ended, or
		// a timed-out last one may still be answered; a stop does not wait.
		_ = p.awaitReply(rctx, p.sentSeq.Load(), timeout)
	}
	stopRecv(errStopped)
	wg.Wait()
	if recvErr != nil {
		sendErr = fmt.Errorf("pinger: receiving replies: %w", recvErr)
	}
	// Pings after the last reply never came back: a gap the reply
	// sequence cannot show.
	if sent := p.sentSeq.Load(); sent > e.lastSeq {
		missing := sent - e.lastSeq
		e.lost += missing
		e.mu.Lock()
		e.winLost += missing
		e.mu.Unlock()
	}
	if p.stale > 0 {
		e.a.opts.Logger.Warn("pinger: stale replies ignored", "endpoint", e.id, "count", p.stale)
	}
	if sendErr != nil && e.ctx.Err() != nil {
		return context.Cause(e.ctx)
	}
	return sendErr
}

// send publishes the pings: paced at RateHz, or back to back with one in
// flight (the next leaves when the last one is answered or timed out).
func (p *pinger) send(ctx context.Context, timeout time.Duration) error {
	e := p.e
	s := e.s
	payload := make([]byte, s.Payload)
	period := e.period
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	begin := time.Now()
	for i := uint64(0); s.Count == 0 || i < s.Count; i++ {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if period > 0 {
			if err := sleepUntil(ctx, timer, begin.Add(time.Duration(i)*period), p.e.ownThread); err != nil {
				return err
			}
		}
		if p.mk != nil {
			if err := p.mk.Mark(); err != nil {
				return fmt.Errorf("marker: %w", err)
			}
			e.marks++
		}
		// The echo overwrites the first 16 bytes with the header's Seq and
		// SendMono; the pinger's own count there helps reading a capture.
		// The reply can arrive before Send returns, so the ping counts as
		// sent from before the call (and is taken back if it failed).
		seq := p.sentSeq.Add(1)
		err := p.pub.send(payload, i+1)
		if err != nil {
			p.sentSeq.Add(^uint64(0)) // not sent: the next ping gets this Seq
		}
		if sent, err := e.tally(err, "ping", i+1); err != nil {
			return err
		} else if !sent {
			continue
		}
		if period == 0 {
			if err := p.awaitReply(ctx, seq, timeout); err != nil {
				return err
			}
			if seq >= noReplyLimit && p.replied.Load() == 0 {
				return fmt.Errorf("pinger: %w: none of the first %d pings was answered within %v each (is the echo running, and does its reply reach this board?)", ErrNoReply, seq, timeout)
			}
		}
	}
	return nil
}

// noReplyLimit is how many back-to-back pings may go unanswered before
// the first reply: a ping-pong that never got one is a set-up fault (no
// echo, a reply path that reaches nowhere), not a measurement of loss,
// and ends within noReplyLimit reply timeouts (30 s by default) instead
// of Count of them. Once a reply came, later losses (a link fault) are
// counted, never fatal.
const noReplyLimit = 15

// awaitReply waits until ping seq is answered, timeout passes (nil: the
// reply is lost unless it still arrives) or ctx ends (its cause).
func (p *pinger) awaitReply(ctx context.Context, seq uint64, timeout time.Duration) error {
	if p.replied.Load() >= seq {
		return nil
	}
	p.wait.Reset(timeout) // Go ≥ 1.23: no stale tick after Reset
	defer p.wait.Stop()
	for p.replied.Load() < seq {
		select {
		case <-p.replyCh:
		case <-p.wait.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}
