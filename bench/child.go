package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/bench/internal/sys"
)

// runChild is the hidden "pong"/"sink" sub-mode: the other end of a
// benchmark, started by the parent with one JSON argument. It reports
// readiness and results as JSON lines on stdout and stops when stdin
// closes (the parent finished, or died).
// sinkIdle is how long a draining sink waits for one more message.
const sinkIdle = 300 * time.Millisecond

func runChild(ctx context.Context, role, arg string, stdin io.Reader, stdout io.Writer) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return fmt.Errorf("%w: %s: bad spec %q: %v", ErrUsage, role, arg, err)
	}
	spec.Role = role
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	halt := func() {
		stop.Store(true)
		cancel()
	}
	// A signal (the parent's ctx) stops the loops as well as stdin's end.
	context.AfterFunc(ctx, func() { stop.Store(true) })
	var progress atomic.Uint64
	if role == "sink" {
		// A sink drains after the parent stopped sending: it stops once
		// nothing arrived for sinkIdle, so in-flight messages count.
		go func() {
			<-eof
			last := progress.Load()
			t := time.NewTicker(sinkIdle / 5)
			defer t.Stop()
			idleSince := time.Now()
			for range t.C {
				if n := progress.Load(); n != last {
					last, idleSince = n, time.Now()
				} else if time.Since(idleSince) >= sinkIdle || ctx.Err() != nil {
					break
				}
			}
			halt()
		}()
	} else {
		go func() {
			<-eof
			halt()
		}()
	}
	enc := json.NewEncoder(stdout)
	done := make(chan doneMsg, 1)
	go func() {
		var d doneMsg
		defer func() { done <- d }()
		pin, err := sys.PinThread(spec.CPU)
		if err != nil {
			_ = enc.Encode(readyMsg{Err: err.Error()})
			d.Err = err.Error()
			return
		}
		defer pin.Release()
		ru0, _ := sys.Self()
		var n uint64
		switch role {
		case "pong":
			p, addr, err := newChildPong(spec)
			if err != nil {
				_ = enc.Encode(readyMsg{Err: err.Error()})
				d.Err = err.Error()
				return
			}
			_ = enc.Encode(readyMsg{Ready: true, Addr: addr})
			n, err = p.serve(ctx, &stop)
			if cerr := p.close(); err == nil {
				err = cerr
			}
			if err != nil {
				d.Err = err.Error()
			}
			d.Count = n
		case "sink":
			d = runSink(ctx, spec, &stop, &progress, func(addr string) { _ = enc.Encode(readyMsg{Ready: true, Addr: addr}) },
				func(err error) { _ = enc.Encode(readyMsg{Err: err.Error()}) })
		default:
			d.Err = "unknown role " + role
			_ = enc.Encode(readyMsg{Err: d.Err})
			return
		}
		ru1, _ := sys.Self()
		d.UserNs = int64(ru1.User - ru0.User)
		d.SysNs = int64(ru1.System - ru0.System)
	}()
	var d doneMsg
	select {
	case d = <-done:
	case <-ctx.Done():
		select {
		case d = <-done:
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%w: %s end did not stop within 5 s of its stdin closing", ErrPeer, role)
		}
	}
	if err := enc.Encode(d); err != nil {
		return err
	}
	if d.Err != "" {
		return fmt.Errorf("%w: %s: %s", ErrPeer, role, d.Err)
	}
	return nil
}
