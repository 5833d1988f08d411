package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/bench"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/netns"
)

// TestMain lets this test binary serve as the pong/sink end: the bench
// re-executes it with bench.ChildEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(bench.ChildEnv) != "" {
		err := bench.Main(context.Background(), bench.Launcher{}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func launcher(t testing.TB) bench.Launcher {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bench.Launcher{Exe: exe}
}

// pins returns ping/pong CPUs 0 and 1 when there are two: spinning ends
// sharing one CPU stall each other for whole scheduler slices.
func pins() (bool, int, int) {
	if runtime.NumCPU() >= 2 {
		return true, 0, 1
	}
	return false, -1, -1
}

func checkOrdered(t *testing.T, what string, p bench.Percentiles, n int64) {
	t.Helper()
	if p.Count != n {
		t.Errorf("%s: count %d, want %d", what, p.Count, n)
	}
	v := []int64{p.Min, p.P50, p.P90, p.P99, p.P999, p.Max}
	if v[0] <= 0 {
		t.Errorf("%s: min %d ns, want > 0", what, v[0])
	}
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			t.Errorf("%s: percentiles not ordered: %v", what, v)
			break
		}
	}
	if p.Max > int64(10*time.Second) {
		t.Errorf("%s: max %v is not a sane round trip", what, time.Duration(p.Max))
	}
}

// noLeftovers fails the test if the run left child processes or
// /dev/shm files behind.
func noLeftovers(t *testing.T) {
	t.Helper()
	shmBefore := shmEntries(t)
	t.Cleanup(func() {
		if kids := children(t); len(kids) > 0 {
			t.Errorf("child processes left running: %v", kids)
		}
		for name := range shmEntries(t) {
			if !shmBefore[name] {
				t.Errorf("/dev/shm/%s left behind", name)
			}
		}
	})
}

func shmEntries(t *testing.T) map[string]bool {
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "hilrig-bench-") {
			m[e.Name()] = true
		}
	}
	return m
}

// children lists live (not zombie) processes whose parent is this process.
func children(t *testing.T) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			out = append(out, pid)
		}
	}
	return out
}

func TestBaselinesEndToEnd(t *testing.T) {
	noLeftovers(t)
	for _, tr := range []string{bench.TRawSpin, bench.TRawFutex, bench.TUDS, bench.TRawUDP, bench.TRawSpinIntra, bench.TChan} {
		t.Run(tr, func(t *testing.T) {
			pin, ping, pong := pins()
			rep, err := bench.PingPong(t.Context(), bench.PingPongConfig{
				Transport: tr, Sizes: []int{16, 64 << 10}, RoundTrips: 300, Warmup: 50, Launcher: launcher(t),
				Pin: pin, PingCPU: ping, PongCPU: pong,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 2 {
				t.Fatalf("got %d results, want 2 (one per size)", len(rep.Results))
			}
			for _, r := range rep.Results {
				what := fmt.Sprintf("%s %d B", r.Transport, r.Size)
				checkOrdered(t, what+" rtt", r.RTT, 300)
				checkOrdered(t, what+" one-way", r.OneWay, 300)
				if r.OneWay.P50 != r.RTT.P50/2 {
					t.Errorf("%s: one-way p50 %d != rtt p50 %d / 2", what, r.OneWay.P50, r.RTT.P50)
				}
			}
		})
	}
}

func runMain(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := bench.Main(t.Context(), launcher(t), args, strings.NewReader(""), &out, &errb)
	if err != nil {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), err
}

// runJSON runs bench.Main with args (which ask for --json) and decodes
// its report; the test fails, naming args, if the run fails, and shows the
// output if it does not parse.
func runJSON(t *testing.T, args ...string) bench.Report {
	t.Helper()
	out, err := runMain(t, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	return rep
}

func TestPingPongJSON(t *testing.T) {
	noLeftovers(t)
	rep := runJSON(t, "pingpong", "--transport", "raw-spin", "--size", "16", "--size", "1KiB", "-n", "200", "--warmup", "20", "--json", "--pin")
	if len(rep.Results) != 2 || rep.Results[1].Size != 1024 || rep.Results[0].RTT.Count != 200 {
		t.Fatalf("unexpected report: %+v", rep)
	}
	if rep.Probe == nil || rep.Probe.BeforeNs <= 0 || rep.Probe.AfterNs <= 0 {
		t.Fatalf("probe missing from report: %+v", rep.Probe)
	}
	// The stall count times round trips one by one over its window.
	for _, st := range []bench.Stalls{rep.Probe.StallsBefore, rep.Probe.StallsAfter} {
		if st.StallNs != 10_000 || st.RoundTrips <= 0 || st.Stalled > st.RoundTrips || st.PerSecond < 0 {
			t.Fatalf("platform stall count missing or inconsistent: %+v", st)
		}
	}
}

func TestPingPongTable(t *testing.T) {
	out, err := runMain(t, "pingpong", "--transport", "chan", "--size", "16,64k", "-n", "100", "--probe=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99.9 µs", "chan", "64KiB", "one-way", "100 round trips"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"pingpong", "--transport", "carrier-pigeon"},
		{"pingpong", "--size", "12x"},
		{"pingpong", "--size", "4"},
		{"pingpong", "--wait", "sometimes"},
		{"pingpong", "--path", "teleport"},
		{"pingpong", "--transport", "uds", "--netns"},
		{"pingpong", "--transport", "shm", "--compare-auth"},
		{"pingpong", "--transport", "raw-udp", "--key", "k"},
		{"pingpong", "--bogus"},
		{"frobnicate"},
		{},
	} {
		_, err := runMain(t, args...)
		if !errors.Is(err, bench.ErrUsage) {
			t.Errorf("%v: err %v, want ErrUsage", args, err)
		}
	}
}

// TestCompareAuth: --compare-auth alternates keyed and unkeyed udp
// sessions (a temporary key) and reports their ratio; the table names the
// keyed rows udp+key.
func TestCompareAuth(t *testing.T) {
	noLeftovers(t)
	rep := runJSON(t, "pingpong", "--transport", "udp", "--compare-auth", "--rounds", "2",
		"-n", "200", "--warmup", "50", "--size", "16", "--json", "--probe=false")
	if len(rep.Ratios) != 1 || rep.Ratios[0].Middleware != "udp+key" || rep.Ratios[0].Baseline != "udp" || rep.Ratios[0].P50 <= 0 {
		t.Fatalf("want one udp+key / udp ratio, got %+v", rep.Ratios)
	}
	if len(rep.Results) != 2 || !rep.Results[0].Auth || rep.Results[1].Auth || len(rep.Results[0].RoundP50) != 2 {
		t.Fatalf("compare-auth results: %+v", rep.Results)
	}
}

func TestParseSizes(t *testing.T) {
	got, err := bench.ParseSizes("16,1KiB,64k,1MiB,10M,3b")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{16, 1 << 10, 64 << 10, 1 << 20, 10 << 20, 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"16", "1KiB,64k", "10MiB", "", ",", "-1", "1e3", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := bench.ParseSizes(s)
		if err != nil {
			if !errors.Is(err, bench.ErrUsage) {
				t.Fatalf("%q: error %v does not wrap ErrUsage", s, err)
			}
			return
		}
		for _, n := range sizes {
			if n <= 0 {
				t.Fatalf("%q: non-positive size %d accepted", s, n)
			}
		}
	})
}

// TestCancelKillsChildren cancels a long run mid-way: the call must return
// promptly and leave no child process or shm file behind.
func TestCancelKillsChildren(t *testing.T) {
	noLeftovers(t)
	for _, tr := range []string{bench.TRawSpin, bench.TRawFutex, bench.TUDS, bench.TRawSpinIntra, bench.TChan} {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		start := time.Now()
		_, err := bench.PingPong(ctx, bench.PingPongConfig{Transport: tr, RoundTrips: 1 << 30, Launcher: launcher(t)})
		cancel()
		if err == nil {
			t.Fatalf("%s: a cancelled run returned no error", tr)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: cancelled run took %v to return", tr, d)
		}
	}
}

func TestMiddlewareTransports(t *testing.T) {
	noLeftovers(t)
	cases := []bench.PingPongConfig{
		{Transport: bench.TShm, Wait: kind.WaitSpin, Path: "copy"},
		{Transport: bench.TShm, Wait: kind.WaitSpin, Path: "loan"},
		{Transport: bench.TShm, Wait: kind.WaitFutex, Path: "copy"},
		{Transport: bench.TShm, Wait: kind.WaitHybrid, Path: "loan"},
		{Transport: bench.TIntra, Wait: kind.WaitSpin, Path: "copy"},
		{Transport: bench.TIntra, Wait: kind.WaitFutex, Path: "loan"},
		{Transport: bench.TUDP, Wait: kind.WaitFutex, Path: "copy"},
		{Transport: bench.TUDP, Wait: kind.WaitFutex, Path: "copy", Reliable: true, Depth: 1, KeepLast: true},
		{Transport: bench.TUDP, Wait: kind.WaitFutex, Path: "copy", Reliable: true, Depth: 1, KeepLast: true, Dedicated: true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s/reliable=%t/keep-last=%t/dedicated=%t", c.Transport, c.Wait, c.Path, c.Reliable, c.KeepLast, c.Dedicated), func(t *testing.T) {
			c.Sizes, c.RoundTrips, c.Warmup, c.Launcher = []int{16, 64 << 10}, 300, 50, launcher(t)
			c.Pin, c.PingCPU, c.PongCPU = pins()
			rep, err := bench.PingPong(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				checkOrdered(t, fmt.Sprintf("%s %d B", r.Transport, r.Size), r.RTT, 300)
				if r.KeepLast != c.KeepLast || r.Reliable != c.Reliable || r.Dedicated != c.Dedicated {
					t.Errorf("%s %d B reported reliable=%t keep-last=%t dedicated=%t, ran %t/%t/%t", r.Transport, r.Size, r.Reliable, r.KeepLast, r.Dedicated, c.Reliable, c.KeepLast, c.Dedicated)
				}
			}
		})
	}
}

func TestUDPAcrossNamespaces(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	noLeftovers(t)
	// Only this process's namespaces: other test binaries make and remove
	// theirs at the same time.
	before, _ := netns.ListOwn()
	for _, tr := range []string{bench.TRawUDP, bench.TUDP} {
		t.Run(tr, func(t *testing.T) {
			rep, err := bench.PingPong(t.Context(), bench.PingPongConfig{Transport: tr, Wait: kind.WaitFutex, NetNS: true,
				Sizes: []int{16}, RoundTrips: 200, Warmup: 20, Launcher: launcher(t)})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Results[0].NetNS {
				t.Errorf("result not marked netns")
			}
			checkOrdered(t, tr+" netns", rep.Results[0].RTT, 200)
		})
	}
	// raw-udp with GSO/GRO (the CLI's default): a 64 KiB message is 45
	// datagrams across the veth, sent in two runs and read coalesced;
	// every round trip must still carry the whole message back in order.
	t.Run(bench.TRawUDP+"/gso", func(t *testing.T) {
		rep, err := bench.PingPong(t.Context(), bench.PingPongConfig{Transport: bench.TRawUDP, NetNS: true, RawGSO: true,
			Sizes: []int{16, 64 << 10}, RoundTrips: 200, Warmup: 20, Launcher: launcher(t)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			if !r.GSO || !r.NetNS {
				t.Errorf("%d B: reported gso=%t netns=%t, ran with both", r.Size, r.GSO, r.NetNS)
			}
			checkOrdered(t, fmt.Sprintf("raw-udp/gso %d B", r.Size), r.RTT, 200)
		}
	})
	after, _ := netns.ListOwn()
	if len(after) > len(before) {
		t.Errorf("namespaces left behind: before %v after %v", before, after)
	}
}

func TestCompareRatio(t *testing.T) {
	noLeftovers(t)
	rep := runJSON(t, "pingpong", "--transport", "shm", "--wait", "spin", "--compare", "--rounds", "2",
		"-n", "400", "--warmup", "100", "--size", "16", "--json", "--pin")
	if len(rep.Ratios) != 1 {
		t.Fatalf("want one ratio, got %+v", rep.Ratios)
	}
	r := rep.Ratios[0]
	if r.Middleware != "shm" || r.Baseline != "raw-spin" || r.P50 <= 0 || r.P99 <= 0 ||
		r.RoundP50Min > r.RoundP50Max {
		t.Fatalf("bad ratio %+v", r)
	}
	if len(rep.Results) != 2 || len(rep.Results[0].RoundP50) != 2 || rep.Results[0].RTT.Count != 400 {
		t.Fatalf("compare results: %+v", rep.Results)
	}
	// The table form prints the ratio line.
	out, err := runMain(t, "pingpong", "--transport", "shm", "--compare", "--rounds", "2", "-n", "200", "--probe=false", "--pin")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ratio shm / raw-spin at 16B: p50 ") {
		t.Fatalf("no ratio line in:\n%s", out)
	}
}

func TestThroughput(t *testing.T) {
	noLeftovers(t)
	pin, pub, sub := pins()
	rep, err := bench.Throughput(t.Context(), bench.ThroughputConfig{Duration: 200 * time.Millisecond, Rounds: 2,
		Pin: pin, PubCPU: pub, SubCPU: sub, Launcher: launcher(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"memcpy", "shm/copy", "shm/copy", "raw-udp", "udp", "raw-udp", "udp"}
	if len(rep.Results) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(rep.Results), len(want), rep.Results)
	}
	for i, r := range rep.Results {
		if r.Transport != want[i] {
			t.Errorf("result %d is %s, want %s", i, r.Transport, want[i])
		}
		if r.Received == 0 || r.Received > r.Sent || r.Lost != r.Sent-r.Received {
			t.Errorf("%s %s: sent %d received %d lost %d", r.Transport, r.Test, r.Sent, r.Received, r.Lost)
		}
		if r.Reliable && (r.MBps <= 0 || r.Lost > 0) {
			t.Errorf("%s %s reliable: %.1f MB/s, lost %d", r.Transport, r.Test, r.MBps, r.Lost)
		}
		if r.Transport != "memcpy" && (r.PubCPU <= 0 || r.SubCPU <= 0) {
			t.Errorf("%s %s: CPU%% pub %.0f sub %.0f, want both measured", r.Transport, r.Test, r.PubCPU, r.SubCPU)
		}
	}
	// shm: wall-clock and per-publisher-thread-CPU-second ratios against
	// memcpy; udp: two ratios against raw-udp.
	if len(rep.Ratios) != 4 || rep.Ratios[0].Value <= 0 || rep.Ratios[1].Value <= 0 {
		t.Fatalf("ratios: %+v", rep.Ratios)
	}
	for _, r := range rep.Results[:2] {
		if r.PubThreadCPU <= 0 || r.PubThreadCPU > 150 {
			t.Errorf("%s %s: publisher thread CPU %.0f%%, want measured (0, 100]", r.Transport, r.Test, r.PubThreadCPU)
		}
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil || !strings.Contains(out.String(), "memcpy MB/s") {
		t.Fatalf("table (%v):\n%s", err, out.String())
	}
}

// TestRawUDPGSOFlag: the CLI's raw-udp baseline sends runs (--raw-gso,
// on by default) wherever two datagrams fit one, says so in the report,
// and --raw-gso=false measures one write per datagram.
func TestRawUDPGSOFlag(t *testing.T) {
	noLeftovers(t)
	for _, tc := range []struct {
		args []string
		gso  bool
	}{
		{nil, true},
		{[]string{"--raw-gso=false"}, false},
		{[]string{"--datagram", "65507"}, false}, // two do not fit a run: nothing to segment
	} {
		args := append([]string{"pingpong", "--transport", "raw-udp", "--datagram", "1472", "--size", "16KiB",
			"-n", "100", "--warmup", "10", "--probe=false", "--json"}, tc.args...)
		rep := runJSON(t, args...)
		if len(rep.Results) != 1 || rep.Results[0].GSO != tc.gso {
			t.Errorf("%v: results %+v, want one with gso=%t", tc.args, rep.Results, tc.gso)
			continue
		}
		checkOrdered(t, fmt.Sprint(tc.args), rep.Results[0].RTT, 100)
	}
}
