package agent

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/tracing"
	"github.com/hilrig/hilrig/tracing/counters"
)

// Kernel traces of late windows (agentproto.TraceSpec). All endpoints of
// one agent process share one tracefs instance, so a publisher's "send"
// markers and a subscriber's "recv" markers on the same host land in the
// buffer the subscriber snapshots. The first endpoint's spec decides the
// buffer size and CPUs; the instance is removed with the last endpoint.

var sharedTrace struct {
	mu   sync.Mutex
	s    *tracing.Session
	refs int
}

// traceMargin widens a snapshot on both sides of the late message, so
// what was running when it was sent is in it.
const traceMargin = int64(time.Millisecond)

// tracer is one endpoint's part in the shared trace.
type tracer struct {
	spec agentproto.TraceSpec
	s    *tracing.Session
	// The open window's worst message; written by the hot loop and read
	// by the window flush, both under endpoint.mu.
	worstLat, worstRecv int64
	worstSeq            uint64
	worstCPU, worstTID  int
	// Snapshots sent, and the worst window's for the final.
	sent    int
	bestMax int64
	best    *agentproto.TraceSnapshot

	// A new worst message over MaxNs kicks the snapshot goroutine at
	// once (kicks coalesce in the one-slot channel): the bounded buffer
	// may no longer hold the message by the time its window is flushed.
	// early (under earlyMu) is the snapshot taken, with the latency it
	// explains.
	kick     chan struct{}
	earlyMu  sync.Mutex
	early    *agentproto.TraceSnapshot
	earlyLat int64
	done     chan struct{}
}

func armTracer(spec agentproto.TraceSpec) (*tracer, error) {
	sharedTrace.mu.Lock()
	defer sharedTrace.mu.Unlock()
	if sharedTrace.s == nil {
		s, err := tracing.Arm(tracing.Config{CPUs: spec.CPUs, BufferKB: spec.BufferKB})
		if err != nil {
			return nil, err
		}
		sharedTrace.s = s
	}
	sharedTrace.refs++
	return &tracer{spec: spec, s: sharedTrace.s, kick: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// watch takes the early snapshots until stop is closed: on each kick it
// waits traceMargin (so the trace holds the margin after the message),
// reads the window's worst message under mu and snapshots it.
func (t *tracer) watch(mu *sync.Mutex, stop <-chan struct{}) {
	defer close(t.done)
	for {
		select {
		case <-stop:
			return
		case <-t.kick:
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(traceMargin)):
		}
		mu.Lock()
		lat, recv, seq, cpu, tid := t.worstLat, t.worstRecv, t.worstSeq, t.worstCPU, t.worstTID
		mu.Unlock()
		snap, err := t.snapshot("", lat, recv, seq, cpu, tid)
		if err != nil {
			continue // the flush tries again
		}
		t.earlyMu.Lock()
		t.early, t.earlyLat = snap, lat
		t.earlyMu.Unlock()
	}
}

func (t *tracer) close() {
	sharedTrace.mu.Lock()
	defer sharedTrace.mu.Unlock()
	if sharedTrace.refs--; sharedTrace.refs == 0 {
		_ = sharedTrace.s.Close()
		sharedTrace.s = nil
	}
}

// markSend writes "hlr send seq=N". 0 allocs.
func (t *tracer) markSend(seq uint64) { _ = t.s.MarkSeq("send", seq) }

// observe writes "hlr recv seq=N" and keeps the window's worst message
// with the CPU and thread it was received on. Caller holds endpoint.mu.
// 0 allocs.
func (t *tracer) observe(seq uint64, lat, recvMono int64) {
	_ = t.s.MarkSeq("recv", seq)
	if lat > t.worstLat {
		t.worstLat, t.worstRecv, t.worstSeq = lat, recvMono, seq
		t.worstCPU, t.worstTID = sys.CurrentCPU(), sys.Gettid()
		if t.spec.MaxNs > 0 && lat > t.spec.MaxNs {
			select { // a pending kick already covers this one
			case t.kick <- struct{}{}:
			default:
			}
		}
	}
}

// takeWorst returns and clears the window's worst message. Caller holds
// endpoint.mu.
func (t *tracer) takeWorst() (lat, recv int64, seq uint64, cpu, tid int) {
	lat, recv, seq, cpu, tid = t.worstLat, t.worstRecv, t.worstSeq, t.worstCPU, t.worstTID
	t.worstLat, t.worstRecv, t.worstSeq = 0, 0, 0
	return
}

// window judges a flushed window against the bounds and returns its
// snapshot when it broke one (nil otherwise, or when the snapshot budget
// is spent). In worst-window mode it also keeps the worst window so far
// for the final.
func (t *tracer) window(ix uint64, h *report.Histogram, lat, recv int64, seq uint64, cpu, tid int) (*agentproto.TraceSnapshot, error) {
	if lat <= 0 || h == nil || h.Count() == 0 {
		return nil, nil
	}
	sum := h.Summary()
	var reasons []string
	if t.spec.MaxNs > 0 && sum.Max > t.spec.MaxNs {
		reasons = append(reasons, fmt.Sprintf("max %s > bound %s", report.FormatNs(sum.Max), report.FormatNs(t.spec.MaxNs)))
	}
	if t.spec.P99Ns > 0 && sum.P99 > t.spec.P99Ns {
		reasons = append(reasons, fmt.Sprintf("p99 %s > bound %s", report.FormatNs(sum.P99), report.FormatNs(t.spec.P99Ns)))
	}
	breach := len(reasons) > 0 && t.sent < agentproto.MaxTraceSnapshots
	worst := t.spec.Mode == agentproto.TraceWorstWindow && lat > t.bestMax
	if !breach && !worst {
		return nil, nil
	}
	reason := strings.Join(reasons, ", ") + fmt.Sprintf(" in window %d", ix)
	if !breach {
		reason = fmt.Sprintf("worst window (%d, max %s)", ix, report.FormatNs(lat))
	}
	// The early snapshot, when it explains this window's worst message;
	// else one now (the buffer may have moved on: Explain says so).
	t.earlyMu.Lock()
	snap, eLat := t.early, t.earlyLat
	t.early = nil
	t.earlyMu.Unlock()
	if snap == nil || eLat != lat {
		var err error
		if snap, err = t.snapshot(reason, lat, recv, seq, cpu, tid); err != nil {
			return nil, err
		}
	}
	snap.Reason = reason
	if worst {
		t.bestMax, t.best = lat, snap
	}
	if !breach {
		return nil, nil
	}
	t.sent++
	return snap, nil
}

// snapshot keeps the trace around the message that arrived at recv after
// waiting lat (send = recv − lat on CLOCK_MONOTONIC: exact with
// LatencyMono, approximate across hosts) and explains it.
func (t *tracer) snapshot(reason string, lat, recv int64, seq uint64, cpu, tid int) (*agentproto.TraceSnapshot, error) {
	from := recv - lat
	s, err := t.s.Snapshot(from, recv, traceMargin)
	if err != nil {
		return nil, err
	}
	x := tracing.Explain(s.Events, tracing.Window{CPU: cpu, FromNs: from, ToNs: recv, WaiterPID: tid, Label: fmt.Sprintf("seq %d", seq)})
	chrome, kept, err := boundedChrome(s.Events, maxChromeBytes)
	if err != nil {
		return nil, err
	}
	summary := x.String()
	if kept < len(s.Events) {
		summary += fmt.Sprintf(" (the trace-event JSON keeps the last %d of %d events, from %s before receipt, to fit the agent protocol's %d-byte line; the summary used them all)",
			kept, len(s.Events), report.FormatNs(recv-s.Events[len(s.Events)-kept].Ns), agentproto.MaxLine)
	}
	return &agentproto.TraceSnapshot{Reason: reason, Summary: summary, FromNs: s.FromNs, ToNs: s.ToNs, CPUs: s.CPUs,
		BufferKB: s.BufferKB, Chrome: chrome,
		Method: "Linux tracefs instance (trace_clock mono): sched_switch, sched_wakeup, irq_handler_entry/exit, softirq_entry/exit, trace_marker at send/recv; µs resolution; receiver CPU and thread from getcpu/gettid at receipt"}, nil
}

// maxChromeBytes bounds a snapshot's trace-event JSON so the window or
// final that carries it stays under agentproto.MaxLine, the longest line
// the controller reads (a longer one is refused whole, window and all):
// half a line, leaving the rest to the window's histogram and words. A
// wait of ~400 ms on a loaded 2-CPU machine made ~1.5 MB.
const maxChromeBytes = agentproto.MaxLine / 2

// boundedChrome writes evs (in time order) as trace-event JSON of at most
// limit bytes, dropping the oldest events until it fits: the end of a
// snapshot is the late message's receipt, what the reader looks at. It
// returns how many events it kept (all, at least one).
func boundedChrome(evs []tracing.Event, limit int) ([]byte, int, error) {
	from := 0
	for {
		var buf bytes.Buffer
		if err := tracing.WriteChrome(&buf, evs[from:]); err != nil {
			return nil, 0, err
		}
		n := len(evs) - from
		if buf.Len() <= limit || n <= 1 {
			return buf.Bytes(), n, nil
		}
		// Keep the share of the events that should fit, less a tenth for
		// the uneven size of events; at least one fewer each round.
		keep := int(float64(n) * float64(limit) / float64(buf.Len()) * 0.9)
		from += max(1, n-keep)
		from = min(from, len(evs)-1)
	}
}

// endpointCounters samples the agent process for an endpoint's counters.
// tids, when set, are the endpoint's own threads: a pinned or prioritised
// endpoint runs its hot loop on one locked OS thread, so its context
// switches are that thread's alone, not the agent's other endpoints' and
// the Go runtime's.
type endpointCounters struct {
	start counters.Sample
	tids  []int
	ok    bool
}

// startCounters samples the counters at an endpoint's start; tids nil
// reads every thread of the agent process.
func startCounters(tids []int) endpointCounters {
	s, err := counters.Read(0, tids)
	return endpointCounters{start: s, tids: tids, ok: err == nil}
}

// finish returns the counters since start and the page sizes of the
// shared-memory mappings under shmDir (and anonymous shared mappings);
// nil when /proc cannot be read. hugeAsked is NodeOptions.HugePages.
func (c endpointCounters) finish(endpoint, shmDir string, hugeAsked bool) *report.EndpointCounters {
	if !c.ok {
		return nil
	}
	now, err := counters.Read(0, c.tids)
	if err != nil {
		return nil
	}
	d := counters.Delta(c.start, now)
	ec := &report.EndpointCounters{Endpoint: endpoint, VoluntaryCtxSwitches: d.VoluntaryCtxSwitches, InvoluntaryCtxSwitches: d.InvoluntaryCtxSwitches, RunDelayNs: d.RunDelayNs,
		MinorFaults: d.MinorFaults, MajorFaults: d.MajorFaults, GCCycles: d.GCCycles, GCPauseTotalNs: d.GCPauseTotalNs, GCPauseMaxNs: d.GCPauseMaxNs,
		Method: ctxScope(c.tids) + counters.MethodCtx + "; faults and GC of the agent process (every endpoint it runs): " + counters.MethodFaults + "; " + counters.MethodGC + "; " + counters.MethodPages}
	if shmDir == "" {
		shmDir = "/dev/shm"
	}
	ms, _ := counters.Mappings(0, 0, 0)
	var why string // read once, only when a mapping that asked for huge pages got none
	for _, m := range ms {
		if !strings.HasPrefix(m.Path, shmDir+string(os.PathSeparator)) && !strings.HasPrefix(m.Path, "/anon_hugepage") && !strings.HasPrefix(m.Path, "/dev/zero") {
			continue
		}
		mp := report.MappingPages{Path: m.Path, SizeKB: m.SizeKB, KernelPageSizeKB: m.KernelPageSizeKB,
			MMUPageSizeKB: m.MMUPageSizeKB, THPKB: m.THPKB, Words: m.PageSizeWords(), HugeRequested: hugeAsked}
		if hugeAsked && !m.Huge() {
			if why == "" {
				why, _ = counters.HugeSupport(hugePaths, shmDir)
			}
			// Honest about why: the system's huge-page supply as it is now.
			mp.Words += "; huge pages requested, not granted: " + why
		}
		ec.Mappings = append(ec.Mappings, mp)
	}
	return ec
}

// hugePaths are the /proc and /sys roots of HugeSupport (a variable so a
// test can point it at a fake tree).
var hugePaths = counters.Paths{Proc: "/proc", Sys: "/sys"}

// ctxScope says whose context switches were counted.
func ctxScope(tids []int) string {
	if len(tids) == 1 {
		return fmt.Sprintf("context switches of the endpoint's locked OS thread (TID %d) only: ", tids[0])
	}
	return "context switches of every thread of the agent process (the endpoint is not on a locked thread: pin it with the board's cpus or priority): "
}
