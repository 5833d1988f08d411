package rig_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// openRig opens rack with opts; the rig is closed at the test's end, an
// error of Close failing the test.
func openRig(ctx context.Context, t *testing.T, rack *fixtures.Rack, opts *rig.Options) *rig.Rig {
	t.Helper()
	r, err := rig.Open(ctx, rack, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func openSim(t *testing.T) *rig.Rig {
	t.Helper()
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := openRig(ctx, t, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache}})
	return r
}

// TestSimRackShm10k: a publisher on board-a (local process) sends 10,000
// messages over shared memory to a subscriber on board-b (a network
// namespace when root, else another local process): none may be lost.
func TestSimRackShm10k(t *testing.T) {
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 256, Count: 10000, RateHz: 20000, Send: agentproto.SendLoan, Markers: true, Window: 100 * time.Millisecond}}
	res := runFlow(ctx, t, r, spec)
	checkZeroLoss(t, res, 10000)
	if rack := r.Rack; rack.Claims(fixtures.CapMultiHost) {
		a, _ := r.Agent(ctx, "board-b")
		if !startsWith(a.Where(), "netns ") {
			t.Errorf("board-b agent runs %s, want in a namespace", a.Where())
		}
	}
	c := res.Case("smoke", "shm 256B", spec)
	c.Finalize()
	if c.Sent != 10000 || c.Delivered != 10000 || c.Lost != 0 || c.Summary.Count != 10000 {
		t.Errorf("case = sent %d delivered %d lost %d summary %+v", c.Sent, c.Delivered, c.Lost, c.Summary)
	}
	t.Logf("shm 256B @20kHz a→b: %s", c.Summary.Line())
	if len(res.Windows[0]) == 0 {
		t.Error("no window summaries from the subscriber")
	}
	var wsum uint64
	for _, w := range res.Windows[0] {
		wsum += w.Received
		if w.RSSBytes <= 0 || w.EndNs < w.StartNs {
			t.Errorf("window %d: rss %d, %d..%d", w.Index, w.RSSBytes, w.StartNs, w.EndNs)
		}
	}
	if wsum != 10000 {
		t.Errorf("windows add up to %d received, want 10000", wsum)
	}
	if res.Subscribers[0].Marks != 10000 || res.Publisher.Marks != 10000 {
		t.Errorf("marks pub %d sub %d, want 10000 each", res.Publisher.Marks, res.Subscribers[0].Marks)
	}
}

// TestSimRackUDP10k: board-b → board-c over UDP on the rig's veth pair.
func TestSimRackUDP10k(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	spec := rig.FlowSpec{Traffic: rig.Traffic{Link: "b-c-udp", Payload: 1024, Count: 10000, RateHz: 10000}}
	res := runFlow(ctx, t, r, spec)
	checkZeroLoss(t, res, 10000)
	c := res.Case("smoke", "udp 1KiB", spec)
	c.Finalize()
	t.Logf("udp 1KiB @10kHz b→c over veth: %s", c.Summary.Line())
}

// runFlow starts spec's flow on r and waits for its result, failing the
// test on either error.
func runFlow(ctx context.Context, t *testing.T, r *rig.Rig, spec rig.FlowSpec) *rig.FlowResult {
	t.Helper()
	f, err := r.Flow(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkZeroLoss(t *testing.T, res *rig.FlowResult, n uint64) {
	t.Helper()
	if res.Publisher.Sent != n || res.Publisher.Reason != agentproto.EndCount {
		t.Errorf("publisher final = %+v", res.Publisher)
	}
	if len(res.Subscribers) != 1 {
		t.Fatalf("%d subscriber finals", len(res.Subscribers))
	}
	s := res.Subscribers[0]
	if s.Received != n || s.Lost != 0 || s.Reason != agentproto.EndCount {
		t.Errorf("subscriber final = received %d lost %d reason %s (%s)", s.Received, s.Lost, s.Reason, s.Error)
	}
	if s.Latency == nil || s.Latency.Count() != int64(n) {
		t.Errorf("latency samples = %v", s.Latency)
	}
}

func startsWith(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// TestTeardownAfterAbortedSpec: a spec that starts a long flow and then
// fails (its context is cancelled, nothing waits) must leave no agent
// process, shared-memory segment, namespace or sim chip after Close.
func TestTeardownAfterAbortedSpec(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	before, _ := netns.List()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, n := range rack.Namespaces {
		name, ok := r.NetnsName(n.Name)
		if !ok {
			t.Fatalf("namespace %s not made", n.Name)
		}
		made = append(made, name)
	}
	var pids []int
	waitReturned := make(chan error, 2)
	for _, link := range []string{"a-b-shm", "b-c-udp"} {
		f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: link, Payload: 64, Duration: time.Hour, RateHz: 1000}})
		if err != nil {
			t.Fatalf("flow %s: %v", link, err)
		}
		// The timed-out spec's goroutine is still blocked in Wait when
		// DeferCleanup runs Close; Close must release it.
		go func() {
			res, err := f.Wait(context.Background())
			if err == nil && res.Publisher.Reason != agentproto.EndStopped {
				err = errors.New("publisher final reason " + res.Publisher.Reason + ", want stopped")
			}
			waitReturned <- err
		}()
	}
	for _, b := range rack.Boards {
		a, err := r.Agent(ctx, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, a.PID())
	}
	segs, err := middleware.ListSegments("")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(segs, func(s middleware.SegmentInfo) bool { return s.Domain == r.Domain }) {
		t.Fatalf("no segment of domain %s while the flow runs: the test would prove nothing", r.Domain)
	}
	cancel() // the spec is aborted: nobody waits for the flows

	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := r.Close(); err != nil { // idempotent
		t.Errorf("second Close: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("agent pid %d still exists after Close (kill 0: %v)", pid, err)
		}
	}
	segs, err = middleware.ListSegments("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.Domain == r.Domain {
			t.Errorf("segment left after Close: %s", s.Path)
		}
	}
	after, _ := netns.List()
	for _, n := range made {
		if slices.Contains(after, n) {
			t.Errorf("namespace %s left after Close", n)
		}
	}
	if len(after) > len(before)+0 {
		for _, n := range after {
			if !slices.Contains(before, n) && slices.Contains(made, n) {
				t.Errorf("namespace %s leaked", n)
			}
		}
	}
	chip, _ := r.Chip("sim:hilrig").Sim()
	if chip == "hilrig" {
		t.Error("the rig shares the rack's sim chip name with other rigs")
	}
	if _, err := os.Stat(gpiosim.Path("", chip)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sim chip file left after Close: %v", err)
	}
	for range 2 {
		select {
		case err := <-waitReturned:
			// Close stops agents gracefully (finals say "stopped") or kills
			// them (ErrAgent); either way Wait returns.
			if err != nil && !errors.Is(err, rig.ErrAgent) {
				t.Errorf("Flow.Wait after Close = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Flow.Wait still blocked 10s after Close")
		}
	}
	if _, err := r.Agent(context.Background(), "board-a"); !errors.Is(err, rig.ErrClosed) {
		t.Errorf("Agent after Close: %v", err)
	}
}

// TestSimScopeAnswers: the sim rack's scope claim is real — the
// simulator Open starts answers SCPI on loopback.
func TestSimScopeAnswers(t *testing.T) {
	r := openSim(t)
	addr := r.ScopeAddr()
	if addr == "" || addr == "sim" {
		t.Fatalf("ScopeAddr = %q, want the simulator's loopback address", addr)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("*IDN?\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || len(line) < 4 {
		t.Fatalf("*IDN? = %q, %v", line, err)
	}
	if err := r.CheckClaims(context.Background()); err != nil {
		t.Errorf("CheckClaims on a working sim rack: %v", err)
	}
}

// TestCheckClaimsFailsBrokenScope: a rack claiming a scope nobody answers
// for is an error (specs fail, they do not skip).
func TestCheckClaimsFailsBrokenScope(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	r := openScopeRack(t, "broken", "brk", addr)
	if err := r.CheckClaims(context.Background()); !errors.Is(err, rig.ErrClaimBroken) || !strings.Contains(err.Error(), "scope") {
		t.Errorf("CheckClaims = %v, want ErrClaimBroken naming the scope", err)
	}
}

// TestCheckClaimsFailsOtherVendor: a scope that answers *IDN? as a vendor
// or model no driver supports fails the health gate, naming what answered,
// instead of every case timing out on commands it does not know.
func TestCheckClaimsFailsOtherVendor(t *testing.T) {
	srv, err := scopesim.Start(t.Context(), scopesim.Config{IDN: "LECROY,WAVESURFER 3024Z,LCRY0001,9.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r := openScopeRack(t, "lecroy", "lcr", srv.Addr())
	err = r.CheckClaims(context.Background())
	if !errors.Is(err, rig.ErrClaimBroken) || !errors.Is(err, scopes.ErrWrongInstrument) || !strings.Contains(err.Error(), "LECROY") {
		t.Errorf("CheckClaims = %v, want ErrClaimBroken naming the LECROY that answered", err)
	}
}

// openScopeRack opens a rig on a one-board rack (name, board a with marker
// tx on sim chip chip) claiming a 2-channel SCPI scope at addr; the rig is
// closed at the test's end.
func openScopeRack(t *testing.T, name, chip, addr string) *rig.Rig {
	t.Helper()
	rack, err := fixtures.ParseRack(name+".yaml", []byte(`name: `+name+`
capabilities: [scope]
boards:
  - {name: a, reach: local, markers: [{name: tx, chip: "sim:`+chip+`", offset: 0}]}
instruments:
  scope: {driver: scpi, address: "`+addr+`", channels: 2, wiring: [{channel: 1, board: a, marker: tx}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rig.Open(context.Background(), rack, &rig.Options{Binary: hilrigBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestCheckClaimsGPIOCapture: a gpio-capture "scope" has no SCPI to ask;
// its claim holds when every wired line can be watched, and breaks, naming
// the channel and the chip, when one cannot.
func TestCheckClaimsGPIOCapture(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"sim marker lines", `name: capsim
capabilities: [scope]
boards:
  - {name: a, reach: local, markers: [{name: tx, chip: "sim:capok", offset: 0}]}
  - {name: b, reach: local, markers: [{name: rx, chip: "sim:capok", offset: 1}]}
instruments:
  scope: {driver: gpio-capture, address: sim, channels: 2, wiring: [{channel: 1, board: a, marker: tx}, {channel: 2, board: b, marker: rx}]}
`, ""},
		{"capture chip missing", `name: capbad
capabilities: [scope]
boards:
  - {name: a, reach: local, markers: [{name: tx, chip: "sim:capbad", offset: 0}]}
  - {name: cap, reach: local, captures: [{name: in, chip: /dev/gpiochip97, offset: 3}]}
instruments:
  scope: {driver: gpio-capture, address: cap, channels: 1, wiring: [{channel: 1, board: a, marker: tx, capture: in}]}
`, "gpio-capture channel 1 (a tx)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rack, err := fixtures.ParseRack(tc.name+".yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			r, err := rig.Open(context.Background(), rack, &rig.Options{Binary: hilrigBin})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = r.CheckClaims(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckClaims = %v, want nil", err)
			case tc.want != "" && (!errors.Is(err, rig.ErrClaimBroken) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "gpiochip97")):
				t.Fatalf("CheckClaims = %v, want ErrClaimBroken naming %q and the chip", err, tc.want)
			}
		})
	}
}

// TestOnePublisherTwoSubscribers: board-a publishes over shm to board-b and
// board-c at once; both get every message.
func TestOnePublisherTwoSubscribers(t *testing.T) {
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{From: "board-a", Transport: "shm", Payload: 64, Count: 5000, RateHz: 10000}, To: []string{"board-b", "board-c"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subscribers) != 2 {
		t.Fatalf("%d subscriber finals", len(res.Subscribers))
	}
	for _, s := range res.Subscribers {
		if s.Received != 5000 || s.Lost != 0 {
			t.Errorf("%s: received %d lost %d", s.Endpoint, s.Received, s.Lost)
		}
	}
	c := res.Case("smoke", "fan-out", f.Spec)
	if c.Delivered != 10000 || c.Subscribers != 2 || c.Histogram.Count() != 10000 {
		t.Errorf("case: delivered %d subs %d samples %d", c.Delivered, c.Subscribers, c.Histogram.Count())
	}
}
