package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
)

// The load role (agentproto.Load): busy threads next to the endpoints
// under test, so a flow can be measured on a board whose CPUs are taken.
// The threads run at the agent's own scheduling class (SCHED_OTHER unless
// the agent was started otherwise) — they compete with the endpoints the
// way application threads do; they never take SCHED_FIFO, which would
// measure the scheduler's priority rule, not the middleware.

// aluBlock is the number of multiply-adds between two looks at the stop
// flag (a few µs: a stop takes effect at once, the flag costs nothing).
const aluBlock = 4096

// memBlockWords is one mem block, 64 KiB in 8-byte words; the stream
// touches one word per 64-byte cache line.
const memBlockWords = 64 << 10 / 8

// loadSink keeps the ALU loop's result observable, so the compiler cannot
// drop the loop.
var loadSink atomic.Uint64

// loadThread is one busy thread's outcome.
type loadThread struct {
	cpuNs int64
	work  uint64
	err   error
}

// runLoad runs a load endpoint: it starts the threads (each locked to its
// OS thread, pinned when asked, its buffer faulted in), acknowledges once
// every one of them is ready, spins until the endpoint ends (stop,
// duration, agent shutdown), then reports what ran in its final. Blocks
// until every thread has stopped.
func (e *endpoint) runLoad() {
	l := *e.s.Load
	if l.Kind == "" {
		l.Kind = agentproto.LoadALU
	}
	n := l.Threads
	threads := make([]loadThread, n)
	var stop atomic.Bool
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			// Never unlocked: a pinned thread then exits with its goroutine
			// instead of going back to the runtime's pool with the load's
			// affinity.
			runtime.LockOSThread()
			t := &threads[i]
			if len(l.CPUs) > 0 {
				if err := sys.PinThread(l.CPUs[i%len(l.CPUs)]); err != nil {
					t.err = fmt.Errorf("load thread %d: %w", i, err)
					ready.Done()
					return
				}
			}
			var buf []uint64
			if l.Kind == agentproto.LoadMem {
				buf = make([]uint64, l.MemMiB<<20/8)
				for j := 0; j < len(buf); j += 512 { // one write per 4 KiB page: faulted in now, not while measured
					buf[j] = 1
				}
			}
			ready.Done()
			<-release
			t0 := sys.ThreadCPUNs()
			if buf != nil {
				t.work = streamMem(&stop, buf)
			} else {
				t.work = spinALU(&stop)
			}
			t.cpuNs = sys.ThreadCPUNs() - t0
		}()
	}
	ready.Wait()
	var errs []error
	for _, t := range threads {
		if t.err != nil {
			errs = append(errs, t.err)
		}
	}
	stop.Store(len(errs) > 0) // a failed start releases the threads straight into their end
	close(release)
	if len(errs) > 0 {
		done.Wait()
		e.fail(agentproto.CodeStart, errors.Join(errs...))
		return
	}
	e.start = time.Now()
	e.usage0 = sys.ProcessUsage()
	e.send(&agentproto.Msg{Kind: agentproto.KindStarted, Started: &agentproto.Started{Endpoint: e.id}})
	<-e.ctx.Done()
	stop.Store(true)
	done.Wait()
	wall := time.Since(e.start)

	rep := &agentproto.LoadReport{Threads: n, CPUs: l.CPUs, Kind: l.Kind, MemMiB: l.MemMiB, WallNs: wall.Nanoseconds(),
		ThreadCPUNs: make([]int64, n)}
	for i, t := range threads {
		rep.ThreadCPUNs[i] = t.cpuNs
		rep.CPUNs += t.cpuNs
		rep.Work += t.work
	}
	u := sys.ProcessUsage()
	f := &agentproto.Final{Endpoint: e.id, Role: agentproto.Load, Reason: agentproto.EndStopped, DurationNs: wall.Nanoseconds(),
		MaxRSSBytes: u.MaxRSSBytes, CPUUserNs: u.UserNs - e.usage0.UserNs, CPUSysNs: u.SysNs - e.usage0.SysNs, Load: rep}
	if errors.Is(context.Cause(e.ctx), errDuration) {
		f.Reason = agentproto.EndDuration
	}
	e.send(&agentproto.Msg{Kind: agentproto.KindFinal, Final: f})
}

// spinALU multiplies and adds (a 64-bit LCG) until stop; it returns the
// number of aluBlock blocks done.
func spinALU(stop *atomic.Bool) uint64 {
	x := uint64(0x9E3779B97F4A7C15)
	var blocks uint64
	for !stop.Load() {
		for range aluBlock {
			x = x*6364136223846793005 + 1442695040888963407
		}
		blocks++
	}
	loadSink.Add(x)
	return blocks
}

// streamMem increments one word per cache line of buf, 64 KiB per block,
// wrapping around, until stop; it returns the number of blocks done.
// len(buf) is a whole number of blocks (MemMiB ≥ 1).
func streamMem(stop *atomic.Bool, buf []uint64) uint64 {
	var blocks uint64
	pos := 0
	for !stop.Load() {
		blk := buf[pos : pos+memBlockWords]
		for j := 0; j < len(blk); j += 8 {
			blk[j]++
		}
		pos += memBlockWords
		if pos >= len(buf) {
			pos = 0
		}
		blocks++
	}
	return blocks
}
