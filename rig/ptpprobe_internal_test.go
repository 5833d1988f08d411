package rig

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/timesync"
)

// probeFed is a PTPProbe whose samples the test feeds as the read loop
// would (no agent process): white-box, because the point is the queue.
func probeFed(stale time.Duration, buf int) (*PTPProbe, *Agent) {
	a := &Agent{Board: &fixtures.Board{Name: "far"}, readEnd: make(chan struct{})}
	p := &PTPProbe{agent: a, id: "ptp1", sock: "/run/ptp4l", stale: stale, buf: buf,
		notify: make(chan struct{}, 1), endedCh: make(chan struct{})}
	a.probes = map[string]*PTPProbe{"ptp1": p}
	return p, a
}

func feed(a *Agent, s agentproto.PTPSample) {
	a.mu.Lock()
	a.ptpSample(&s)
	a.mu.Unlock()
}

// TestPTPProbeStatusOrderAndConcurrency: Status hands out every sample
// exactly once, oldest first, also to concurrent callers; a failed poll
// is an error naming board and socket stamped on the board's time.
func TestPTPProbeStatusOrderAndConcurrency(t *testing.T) {
	p, a := probeFed(5*time.Second, 1024)
	base := time.Now().Add(-time.Minute).UnixNano()
	const n = 400
	go func() {
		for i := uint64(1); i <= n; i++ {
			feed(a, agentproto.PTPSample{Probe: "ptp1", Seq: i, AtNs: base + int64(i), PortState: timesync.PortStateSlave, OffsetNs: int64(i)})
		}
	}()
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := int64(0)
			for range n / 4 {
				st, err := p.Status(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if o := int64(st.Offset); o <= prev {
					t.Errorf("sample %d after %d: out of order", o, prev)
				} else {
					prev = o
				}
				if st.ReadAt.UnixNano() != base+int64(st.Offset) {
					t.Errorf("ReadAt %d, want the board's poll time %d", st.ReadAt.UnixNano(), base+int64(st.Offset))
				}
				mu.Lock()
				seen[int64(st.Offset)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct samples handed out, want %d", len(seen), n)
	}
	for o, k := range seen {
		if k != 1 {
			t.Errorf("sample %d handed out %d times", o, k)
		}
	}
	feed(a, agentproto.PTPSample{Probe: "ptp1", Seq: n + 3, AtNs: base + 999, Err: "board far: ptp4l socket /run/ptp4l: gone"})
	st, err := p.Status(context.Background())
	if !errors.Is(err, ErrPTPProbe) || !strings.Contains(err.Error(), "board far: ptp4l socket /run/ptp4l") || st.ReadAt.UnixNano() != base+999 {
		t.Errorf("failed poll: %v at %v, want ErrPTPProbe naming board and socket at the board's time", err, st.ReadAt)
	}
	if p.Dropped() != 2 {
		t.Errorf("Dropped = %d, want the 2 sequence numbers skipped", p.Dropped())
	}
}

// TestPTPProbeStatusFailures: silence past the staleness timeout, the
// probe's end and the agent's death are errors naming board and socket;
// the stale error is stamped on the board's clock extrapolated from the
// last sample; a full queue drops the oldest and counts it.
func TestPTPProbeStatusFailures(t *testing.T) {
	p, a := probeFed(50*time.Millisecond, 2)
	boardT := time.Now().Add(-time.Hour) // a board clock an hour behind
	feed(a, agentproto.PTPSample{Probe: "ptp1", Seq: 1, AtNs: boardT.UnixNano()})
	if _, err := p.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := p.Status(context.Background())
	if !errors.Is(err, ErrPTPProbe) || !strings.Contains(err.Error(), "board far") || !strings.Contains(err.Error(), "/run/ptp4l") {
		t.Errorf("stale: %v, want ErrPTPProbe naming board and socket", err)
	}
	if d := st.ReadAt.Sub(boardT); d < 50*time.Millisecond || d > 10*time.Second {
		t.Errorf("stale error at board time +%v, want the last sample's time + the wait", d)
	}
	for i := uint64(2); i <= 5; i++ {
		feed(a, agentproto.PTPSample{Probe: "ptp1", Seq: i, AtNs: boardT.UnixNano() + int64(i)})
	}
	if p.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2 (buffer of 2, 4 fed)", p.Dropped())
	}
	if st, _ := p.Status(context.Background()); st.ReadAt.UnixNano() != boardT.UnixNano()+4 {
		t.Errorf("after overflow got sample at +%d, want the oldest kept (+4)", st.ReadAt.UnixNano()-boardT.UnixNano())
	}
	_, _ = p.Status(context.Background())
	feed(a, agentproto.PTPSample{Probe: "ptp1", Seq: 6, AtNs: boardT.UnixNano() + 6, End: agentproto.PTPEndShutdown})
	if _, err := p.Status(context.Background()); !errors.Is(err, ErrPTPProbe) || !strings.Contains(err.Error(), "shutdown") {
		t.Errorf("after the end: %v, want ErrPTPProbe saying it ended", err)
	}
	if _, ok := a.probes["ptp1"]; ok {
		t.Error("ended probe still routed")
	}

	p2, a2 := probeFed(5*time.Second, 8)
	a2.dead = errors.New("agent output ended")
	close(a2.readEnd)
	if _, err := p2.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "board far") {
		t.Errorf("dead agent: %v, want an error naming the board", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := p2.Status(ctx); !errors.Is(err, context.Canceled) || st.ReadAt.IsZero() {
		t.Errorf("cancelled: %v (ReadAt %v), want context.Canceled with ReadAt set", err, st.ReadAt)
	}
}
