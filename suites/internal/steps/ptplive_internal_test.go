package steps

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// scrapeHTTP reads one series from the endpoint at addr over HTTP, as
// Prometheus would; ok is false when the series is absent.
func scrapeHTTP(ctx context.Context, addr, series string) (v float64, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, fmt.Errorf("scrape %s: %w", addr, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if s, found := strings.CutPrefix(l, series+" "); found {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return 0, false, fmt.Errorf("scrape %s: %q: %w", addr, l, err)
			}
			return v, true, nil
		}
	}
	return 0, false, nil
}

// TestLivePTPFromRealPTP4L feeds the live endpoint's PTP series from a
// real linuxptp pair (ptprig: grandmaster and slave ptp4l in two network
// namespaces, software timestamping, free_running 1 — this machine's
// clock is never adjusted) through the suites' own path: the PTP gate a
// gated flow starts (startGate: a timesync.Monitor on each board's ptp4l
// socket) and the live feeder of a running flow (feedLive with the gate's
// feedLive). Both boards of the rack read the rig's one slave ptp4l, as
// two local boards of a PTP rack would read theirs.
//
// While the slave is locked the scraped endpoint shows both boards
// locked, with exactly the offset the Monitor measured at its last poll.
// When the grandmaster is killed (the slave's ptp4l runs on but receives
// no Sync: stalled) the boards go unlocked; when the slave's ptp4l is
// killed too (gone: its socket no longer answers) they stay unlocked,
// the Monitor recording read errors.
func TestLivePTPFromRealPTP4L(t *testing.T) {
	if err := ptprig.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pr, err := ptprig.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pr.Close(); err != nil {
			t.Errorf("ptprig close: %v", err)
		}
	})
	rack, err := fixtures.ParseRack("ptp-live.yaml", []byte(fmt.Sprintf(`name: ptp-live
capabilities: [ptp]
boards:
  - name: far
    reach: local
    clock: {stamp: realtime, ptp4l_socket: %[1]s}
  - name: near
    reach: local
    clock: {stamp: realtime, ptp4l_socket: %[1]s}
links:
  - {name: far-near-udp, a: far, b: near, transport: udp, a_addr: 127.0.0.1, b_addr: 127.0.0.1}
ptp: {grandmaster: external, max_offset: 100us}
bounds:
  - name: loose
    entries:
      - {transport: udp, payload: 64, p50: 1s, p99: 2s, p999: 3s, max: 5s, max_lost: 0}
`, pr.SlaveSocket)))
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{TestContext: &harness.TestContext{Suite: "test", Rack: rack}}
	// Windows of 5 s, as a gated flow's: the gate polls every 1.25 s,
	// longer than the Sync interval (1 s), so a locked poll sees a Sync.
	gate, err := startGate(ctx, env, "far", "near", 5*time.Second)
	if err != nil {
		t.Fatalf("start the PTP gate on %s: %v\n%s", pr.SlaveSocket, err, pr.Tail(ptprig.Slave, 20))
	}
	t.Cleanup(gate.close)

	m := live.New()
	addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := &fakeSub{board: "near"}
	sub.add(0, 100)
	subs := []windowSource{sub}
	stop := feedLive(m, "udp 64 gated", subs, gate.period, gate.feedLive)
	t.Cleanup(stop)

	// waitScraped polls the endpoint until every board's series has the
	// value, or the deadline passes.
	waitScraped := func(series string, want float64, timeout time.Duration) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, timeout)
		defer wcancel()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			all := true
			var last string
			for _, b := range gate.boards {
				s := fmt.Sprintf("%s{board=%q}", series, b)
				v, ok, err := scrapeHTTP(wctx, addr.String(), s)
				if err != nil || !ok || v != want {
					all, last = false, fmt.Sprintf("%s = %v (present %v, %v)", s, v, ok, err)
					break
				}
			}
			if all {
				return
			}
			select {
			case <-wctx.Done():
				lk, verdict, _ := gate.mon.Locked("far")
				t.Fatalf("%s not %v within %v: %s; monitor: locked %v, %s %s\nslave ptp4l:\n%s", series, want, timeout, last,
					lk, verdict.Cond, verdict.Detail, pr.Tail(ptprig.Slave, 20))
			case <-tick.C:
			}
		}
	}

	// Locked: both start together, the slave locks in 11–13 s, then the
	// Monitor wants fresh measurements.
	waitScraped("hilrig_board_ptp_locked", 1, 90*time.Second)
	// The offset is the one the Monitor measured. The ticking feeder is
	// stopped, then one feeder pass is made (a feeder with an hour's
	// period passes only when stopped), bracketed by the Monitor's
	// series: when no poll landed between, the pass read the last one.
	stop()
	var checked bool
	for range 5 {
		polls := func() (n int) {
			for _, b := range gate.boards {
				ss, err := gate.mon.Series(b)
				if err != nil {
					t.Fatal(err)
				}
				n += len(ss)
			}
			return n
		}
		before := polls()
		feedLive(m, "udp 64 gated", subs, time.Hour, gate.feedLive)()
		if polls() != before {
			continue // a poll landed during the pass: try again
		}
		for _, b := range gate.boards {
			ss, err := gate.mon.Series(b)
			if err != nil {
				t.Fatal(err)
			}
			last := ss[len(ss)-1]
			if !last.Locked || last.State != timesync.PortStateSlave || last.Err != "" {
				t.Fatalf("board %s's last poll %+v: want locked, SLAVE", b, last)
			}
			for series, want := range map[string]float64{
				"hilrig_board_ptp_locked":         1,
				"hilrig_board_ptp_offset_seconds": float64(last.Offset) / 1e9,
			} {
				s := fmt.Sprintf("%s{board=%q}", series, b)
				got, ok, err := scrapeHTTP(ctx, addr.String(), s)
				if err != nil || !ok || got != want {
					t.Errorf("%s = %v (present %v, %v), want %v: the Monitor's last poll of %s's ptp4l (offset %v)",
						s, got, ok, err, want, b, last.Offset)
				}
			}
			if last.Offset.Abs() > timesync.DefaultBoundSoftware {
				t.Errorf("board %s: locked with |offset| %v > %v", b, last.Offset, timesync.DefaultBoundSoftware)
			}
			t.Logf("board %s locked, offset %v (%s)", b, last.Offset, last.At.UTC().Format(time.RFC3339Nano))
		}
		checked = true
		break
	}
	if !checked {
		t.Fatal("a Monitor poll landed during every one of 5 feeder passes (polls are 1.25 s apart)")
	}

	// Stalled: no grandmaster, so the slave's ptp4l receives no Sync
	// (its ingress time freezes; it still says SLAVE for ~5 s).
	stop = feedLive(m, "udp 64 gated", subs, gate.period, gate.feedLive)
	t.Cleanup(stop)
	if err := pr.KillDaemon(ctx, ptprig.GM); err != nil {
		t.Fatal(err)
	}
	waitScraped("hilrig_board_ptp_locked", 0, 20*time.Second)
	if _, v, _ := gate.mon.Locked("far"); v.Cond == timesync.CondReadError {
		t.Errorf("stalled: monitor says %s (%s), want a stale or state condition: the slave ptp4l is still running", v.Cond, v.Detail)
	}
	// Gone: the slave's ptp4l killed; the boards stay unlocked and the
	// Monitor records read errors.
	if err := pr.KillDaemon(ctx, ptprig.Slave); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	for {
		if _, v, _ := gate.mon.Locked("far"); v.Cond == timesync.CondReadError {
			break
		}
		select {
		case <-rctx.Done():
			_, v, _ := gate.mon.Locked("far")
			t.Fatalf("slave ptp4l gone: monitor still %s (%s), want a read error", v.Cond, v.Detail)
		case <-time.After(100 * time.Millisecond): // polling interval against the deadline
		}
	}
	// The feeder's next pass shows the offset as unknown (NaN), not as
	// the 0 of a failed read, which would read as a perfect offset.
	for _, b := range gate.boards {
		s := fmt.Sprintf("hilrig_board_ptp_offset_seconds{board=%q}", b)
		for {
			got, ok, err := scrapeHTTP(ctx, addr.String(), s)
			if err == nil && ok && math.IsNaN(got) {
				break
			}
			select {
			case <-rctx.Done():
				t.Fatalf("slave ptp4l gone: %s = %v (present %v, %v), want NaN", s, got, ok, err)
			case <-time.After(100 * time.Millisecond): // polling interval against the deadline
			}
		}
	}
	stop()
	for _, b := range gate.boards {
		s := fmt.Sprintf("hilrig_board_ptp_locked{board=%q}", b)
		if got, ok, err := scrapeHTTP(ctx, addr.String(), s); err != nil || !ok || got != 0 {
			t.Errorf("slave ptp4l gone: %s = %v (present %v, %v), want 0", s, got, ok, err)
		}
	}
}
