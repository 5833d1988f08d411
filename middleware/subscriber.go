package middleware

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/hilrig/hilrig/middleware/internal/rt"
)

// Subscriber receives one topic. Receive/Next must be called from one
// goroutine at a time; Stats and Close are safe concurrently (Close may
// even be called from inside the callback).
type Subscriber struct {
	n     *Node
	c     Contract
	o     SubscriberOptions
	t     subTransport
	lc    lifecycle
	final SubscriberStats
	done  chan struct{}

	inCB    atomic.Int32 // a callback is running (Close from inside it must not wait)
	errFn   error        // error returned by Receive's fn, carried out of next
	rtTid   int          // thread Next applied RT options to (0: not yet)
	rtState rt.ThreadState
}

// NewSubscriber creates a subscriber for contract c. It sees messages
// published after it was created (no replay of history). Does not block.
func (n *Node) NewSubscriber(c Contract, opts *SubscriberOptions) (*Subscriber, error) {
	so := SubscriberOptions{}
	if opts != nil {
		so = *opts
	}
	if so.Priority < 0 || so.Priority > 99 {
		return nil, fmt.Errorf("node %q: subscriber %q: %w: SCHED_FIFO priority %d, want 0 (off) or 1..99", n.name, c.Topic, ErrContract, so.Priority)
	}
	s := &Subscriber{n: n, c: c, o: so, done: make(chan struct{})}
	var (
		t   subTransport
		err error
	)
	switch {
	case usesUDP(c):
		t, err = newUDPSubscriber(n, c, opts, &s.inCB)
	case c.Transport == TransportIntra:
		t, err = n.newRingSub(c, &so, true, s.lc.closing, &s.inCB)
	case c.Transport == TransportAuto || c.Transport == TransportShm:
		t, err = n.newRingSub(c, &so, false, s.lc.closing, &s.inCB)
	default:
		err = fmt.Errorf("%w: topic %q: transport %d unknown", ErrContract, c.Topic, c.Transport)
	}
	if err != nil {
		return nil, fmt.Errorf("node %q: subscriber: %w", n.name, err)
	}
	s.t = t
	s.lc.init()
	if err := n.add(nil, s); err != nil {
		t.close()
		return nil, err
	}
	return s, nil
}

// Contract is the subscriber's contract.
func (s *Subscriber) Contract() Contract { return s.c }

func (s *Subscriber) wantRT() bool { return s.o.CPU != nil || s.o.Priority > 0 }

// cpu is the CPU to pin to, -1 for none (rt.SetThread's convention).
func (s *Subscriber) cpu() int {
	if s.o.CPU == nil {
		return -1
	}
	return *s.o.CPU
}

// Receive calls fn for every message until ctx is done (returns
// ctx.Err()), the subscriber is closed (ErrClosed) or fn returns an error
// (returned as is). A shared-memory segment overwritten or truncated by
// another process ends it with ErrCorrupt naming the file (fn runs with
// memory faults turned into that error; if it comes right after fn, the
// message fn saw may have been torn). Blocks. The *Message and its Payload are valid only
// until fn returns. With CPU/Priority options the calling goroutine is
// locked to its OS thread, which is pinned / made SCHED_FIFO for the
// duration and restored afterwards; an option the process may not use
// fails with ErrPermission ("needs CAP_SYS_NICE or root").
func (s *Subscriber) Receive(ctx context.Context, fn func(*Message) error) error {
	if !s.lc.enter() {
		return ErrClosed
	}
	defer s.exit()
	if s.wantRT() && s.rtTid == 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		st, err := rt.SetThread(s.cpu(), s.o.Priority)
		if err != nil {
			return fmt.Errorf("subscriber %q: %w", s.c.Topic, mapErr(err))
		}
		defer st.Restore()
	}
	cb := func(m *Message) { s.errFn = fn(m) }
	for {
		if err := s.t.next(ctx, cb); err != nil {
			return err
		}
		if err := s.errFn; err != nil {
			s.errFn = nil
			return err
		}
	}
}

// Next waits for one message and calls fn with it. Blocks until a message,
// ctx is done (ctx.Err()) or Close (ErrClosed). 0 allocs per message (with
// a fn that does not allocate). With CPU/Priority options, the first call
// locks the calling goroutine to its thread for good and applies them;
// later calls from another thread fail rather than run unpinned.
func (s *Subscriber) Next(ctx context.Context, fn func(*Message)) error {
	if !s.lc.enter() {
		return ErrClosed
	}
	defer s.exit()
	if s.wantRT() {
		if s.rtTid == 0 {
			runtime.LockOSThread() // kept: the thread dies with its goroutine
			st, err := rt.SetThread(s.cpu(), s.o.Priority)
			if err != nil {
				runtime.UnlockOSThread()
				return fmt.Errorf("subscriber %q: %w", s.c.Topic, mapErr(err))
			}
			s.rtState, s.rtTid = st, rt.Gettid()
		} else if tid := rt.Gettid(); tid != s.rtTid {
			return fmt.Errorf("subscriber %q: %w: Next called on thread %d, RT options were applied to thread %d (call Next from one goroutine, or use Receive)", s.c.Topic, ErrContract, tid, s.rtTid)
		}
	}
	return s.t.next(ctx, fn)
}

func (s *Subscriber) exit() {
	if s.lc.leave() {
		s.teardown()
	}
}

// Stats returns the subscriber's counters. Safe concurrently, and from
// inside a callback that closed the subscriber. After Close it returns the
// live counters while a call still runs, then the final ones; it waits
// only for a teardown already under way.
func (s *Subscriber) Stats() SubscriberStats {
	if !s.lc.enterLive() {
		<-s.done
		return s.final
	}
	var st SubscriberStats
	s.t.stats(&st)
	s.exit()
	return st
}

// Close closes the subscriber and removes it from the segment's table.
// A Receive/Next blocked in another goroutine returns ErrClosed (it is
// woken at once; a spinning one notices within a few µs). Close waits for
// that and for a running callback to return, so the subscriber's segment
// is released when it returns, on every transport. Called from inside a
// callback (this subscriber's, or another one's while this one's callback
// runs in a third goroutine), it returns at once and the teardown happens
// when this subscriber's callback returns. Idempotent.
func (s *Subscriber) Close() error { return s.close(true) }

func (s *Subscriber) close(fromUser bool) error {
	first, last := s.lc.close()
	if !first {
		return nil
	}
	if fromUser {
		s.n.remove(nil, s)
	}
	if last {
		return s.teardown()
	}
	if i, ok := s.t.(interface{ interrupt() }); ok {
		i.interrupt()
	}
	// Wait for the running Receive/Next to notice (one sleep slice at
	// most) and for its callback to return, so the segment is released
	// when Close returns; but not from inside a callback, which would wait
	// for itself. A callback running (inCB) on another goroutine is waited
	// for: only the calling goroutine's own stack says which case it is.
	if s.inCB.Load() == 0 || !callerInCallback() {
		<-s.done
	}
	return nil
}

// callbackRunners are the functions that call a subscriber's callback
// (the transports' next runs under them), by name, as stack frames report
// them (inlined or not). Set once at init.
var callbackRunners = [...]string{
	funcName((*Subscriber).Next),
	funcName((*Subscriber).Receive),
}

func funcName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}

// callerInCallback reports whether the calling goroutine is inside a
// subscriber's callback: a Next or Receive is on its stack. Not on a hot
// path (Close while a callback runs); allocates.
func callerInCallback() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	for n == len(pcs) && n < 1<<16 { // deeper than that: look at all of it
		pcs = make([]uintptr, 4*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for more := true; more; {
		var f runtime.Frame
		f, more = frames.Next()
		if slices.Contains(callbackRunners[:], f.Function) {
			return true
		}
	}
	return false
}

func (s *Subscriber) teardown() error {
	s.t.stats(&s.final)
	err := s.t.close()
	close(s.done)
	return err
}

// CopyPayload appends the payload to dst[:0] and returns it, for callers
// that keep data beyond the callback.
func (m *Message) CopyPayload(dst []byte) []byte { return append(dst[:0], m.Payload...) }
