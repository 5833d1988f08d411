package dut

import (
	"context"
	"sync"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// Crash is one end of the program that the supervisor answered with a
// restart: a fault window from DiedMono to RestartedMono (CLOCK_MONOTONIC
// of the controller, ns; the restart done, the program not necessarily
// answering yet).
type Crash struct {
	DiedMono, RestartedMono int64
	// Exit is how the process ended ("signal: killed").
	Exit string
	// Output is the program's output tail when it ended.
	Output string
	// RestartErr is why the restart failed ("": it did not); the
	// supervisor stops after a failed restart.
	RestartErr string
}

// Supervisor restarts a program whenever it ends until stopped: the
// crash-restart of a soak. Safe for concurrent use.
type Supervisor struct {
	p       *Program
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	crashes []Crash
}

// Supervise starts restarting p (Program.Restart) each time its process
// ends, until Stop or ctx ends; each end is recorded as a Crash. An
// external dut has no process to watch: Stop returns no crashes. Does
// not block.
func (p *Program) Supervise(ctx context.Context) *Supervisor {
	ctx, cancel := context.WithCancel(ctx)
	s := &Supervisor{p: p, cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	return s
}

func (s *Supervisor) run(ctx context.Context) {
	defer close(s.done)
	for {
		died := s.p.Done()
		if died == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-died:
		}
		c := Crash{DiedMono: monoclock.Now(), Exit: s.p.exitString(), Output: s.p.OutputTail(10)}
		if ctx.Err() != nil || s.p.isStopped() {
			return // stopped while it ended: a Stop's kill, not a crash
		}
		err := s.p.Restart(ctx)
		c.RestartedMono = monoclock.Now()
		if err != nil {
			c.RestartErr = err.Error()
		}
		s.mu.Lock()
		s.crashes = append(s.crashes, c)
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Crashes are the ends recorded so far.
func (s *Supervisor) Crashes() []Crash {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Crash(nil), s.crashes...)
}

// Stop ends the supervision (the program keeps running) and returns the
// crashes. Blocks until a restart under way has finished. Idempotent.
func (s *Supervisor) Stop() []Crash {
	s.cancel()
	<-s.done
	return s.Crashes()
}

// WindowMisses counts the missed stimuli of m in the crashes' fault
// windows: from a deadline before the death (an answer in flight dies
// with the program) to the first answered stimulus after the restart
// (the restarted program's start-up is part of the fault).
func (m *Measurement) WindowMisses(crashes []Crash) int64 {
	var n int64
	deadline := int64(m.DUT.Correlation.Deadline)
	missed := map[int]bool{}
	for _, i := range m.Tally.MissedAt {
		missed[i] = true
	}
	for _, c := range crashes {
		from, to := c.DiedMono-deadline, c.RestartedMono
		for i, st := range m.Stimuli {
			if st < from {
				continue
			}
			if st >= to && !missed[i] {
				break // the first answer after the restart closes the window
			}
			if missed[i] {
				n++
			}
		}
	}
	return n
}

// exitString is how the ended current process ended. Call it only after
// Done is closed (it waits for the exit status).
func (p *Program) exitString() string {
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	if proc == nil {
		return ""
	}
	if err := proc.Wait(context.Background()); err != nil {
		return err.Error()
	}
	return "exit status 0"
}

func (p *Program) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}
