package steps

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
)

// fakeSub is a subscriber whose windows arrive when the test says.
type fakeSub struct {
	mu    sync.Mutex
	board string
	ws    []agentproto.Window
}

func (f *fakeSub) Windows() []agentproto.Window {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]agentproto.Window(nil), f.ws...)
}

func (f *fakeSub) Board() string { return f.board }

func (f *fakeSub) add(i uint64, received uint64) {
	h := report.NewHistogram()
	h.Record(int64(10000 * (i + 1)))
	f.mu.Lock()
	f.ws = append(f.ws, agentproto.Window{Index: i, Received: received, Latency: h, RSSBytes: 1 << 20})
	f.mu.Unlock()
}

func scrapeLine(m *live.Metrics, series string) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

// While a flow runs, each subscriber window reaches the live endpoint
// once, within a few periods of arriving (not only when the case ends),
// and stop exports the last ones.
func TestFeedLiveExportsWindowsWhileRunning(t *testing.T) {
	m := live.New()
	sub := &fakeSub{board: "board-b"}
	var ptpPasses int
	var ptpMu sync.Mutex
	stop := feedLive(m, "udp 64", []windowSource{sub}, 10*time.Millisecond, func(m *live.Metrics) {
		ptpMu.Lock()
		ptpPasses++
		n := ptpPasses
		ptpMu.Unlock()
		m.BoardPTP("board-b", n%2 == 0, time.Duration(n)*time.Nanosecond)
	})
	defer stop()
	const total = `hilrig_flow_messages_total{board="board-b",flow="udp 64",kind="delivered"}`
	wait := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for scrapeLine(m, total) != want {
			if time.Now().After(deadline) {
				t.Fatalf("delivered total %q, want %s", scrapeLine(m, total), want)
			}
			time.Sleep(5 * time.Millisecond) // polling the feeder's effect against a deadline
		}
	}
	sub.add(0, 100)
	wait("100")
	sub.add(1, 50)
	wait("150") // window 0 not counted twice
	sub.add(2, 7)
	stop()
	if got := scrapeLine(m, total); got != "157" {
		t.Fatalf("after stop delivered total %q, want 157 (the last window exported by stop)", got)
	}
	if got := scrapeLine(m, `hilrig_flow_window_latency_seconds{board="board-b",flow="udp 64",quantile="1"}`); !strings.HasPrefix(got, "3.00") {
		t.Fatalf("last window max %q, want ~3e-05", got)
	}
	// The PTP callback ran on every pass, the last one included.
	ptpMu.Lock()
	n := ptpPasses
	ptpMu.Unlock()
	if n < 3 {
		t.Fatalf("ptp fed on %d passes", n)
	}
	if got := scrapeLine(m, `hilrig_board_ptp_offset_seconds{board="board-b"}`); got != strconv.FormatFloat(float64(n)/1e9, 'g', -1, 64) {
		t.Fatalf("ptp offset %q after %d passes", got, n)
	}
	if got, want := scrapeLine(m, `hilrig_board_ptp_locked{board="board-b"}`), map[bool]string{true: "1", false: "0"}[n%2 == 0]; got != want {
		t.Fatalf("ptp locked %q after %d passes, want %s", got, n, want)
	}
	stop() // idempotent
	if s := feedLive(nil, "x", []windowSource{sub}, time.Millisecond, nil); s == nil {
		t.Fatal("nil stop")
	} else {
		s()
	}
}
