package bench

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/netns"
)

// cycloneLoopback is /work/shared/docs/peers/cyclonedds-lo.xml: lo only,
// multicast off, unicast discovery to 127.0.0.1. Every ddsperf this
// package starts gets it through CYCLONEDDS_URI, overriding the caller's
// environment: by default ddsperf multicasts on the default interface,
// which the rig must never do.
//
//go:embed cyclonedds-lo.xml
var cycloneLoopback []byte

// DDSPerfConfig configures [DDSPerf].
type DDSPerfConfig struct {
	// Duration of each ddsperf run and each hilrig measurement (default 3 s).
	Duration time.Duration
	// RoundTrips for the hilrig ping-pong per size (default 20000).
	RoundTrips int
	// Pin runs the two ends of everything on CPUs 0 and 1 (taskset for ddsperf).
	Pin bool
	// NetNS runs the round trips across a veth between two network
	// namespaces made for the run (root): ddsperf's pong and hilrig's pong
	// in one, the pings in the other, each Cyclone confined to its veth
	// end. The streams stay out (hilrig's throughput bench has no
	// namespace mode), so the report then has round trips only.
	NetNS    bool
	Launcher Launcher
}

// DDSPerfLatency is one ddsperf ping-pong: the medians over its one-second
// reports (the first report is warm-up and dropped), round trip, ns —
// twice what ddsperf prints, which is half a round trip (parsePing).
type DDSPerfLatency struct {
	Size    int   `json:"size"`
	Count   int64 `json:"count"`
	P50     int64 `json:"p50_ns"`
	P90     int64 `json:"p90_ns"`
	P99     int64 `json:"p99_ns"`
	Max     int64 `json:"max_ns"`
	Reports int   `json:"reports"`
}

// DDSPerfRate is one ddsperf pub/sub stream as its subscriber reported it.
type DDSPerfRate struct {
	Size       int     `json:"size"`
	Reliable   bool    `json:"reliable"`
	RecvPerSec float64 `json:"recv_per_sec"`
	MBps       float64 `json:"mb_per_sec"`
	LostPct    float64 `json:"lost_pct"`
	Reports    int     `json:"reports"`
}

// DDSPerfReport is the side-by-side result.
type DDSPerfReport struct {
	Command       string             `json:"command"`
	DDSLatency    []DDSPerfLatency   `json:"ddsperf_latency"`
	HilrigLatency []Result           `json:"hilrig_latency"`
	DDSRate       []DDSPerfRate      `json:"ddsperf_rate"`
	HilrigRate    []ThroughputResult `json:"hilrig_rate"`
	Ratios        []ThroughputRatio  `json:"ratios"`
	// KernelTracing: as Report.KernelTracing.
	KernelTracing []string `json:"kernel_tracing,omitempty"`
	// NetNS: the round trips crossed a veth between two namespaces (and
	// no streams ran).
	NetNS bool `json:"netns,omitempty"`
}

// ddsperfBinary returns the path of ddsperf or ErrToolMissing.
func ddsperfBinary() (string, error) {
	p, err := exec.LookPath("ddsperf")
	if err != nil {
		return "", fmt.Errorf("%w: ddsperf not found in PATH; install Debian's cyclonedds-tools (apt-get install cyclonedds-tools)", ErrToolMissing)
	}
	return p, nil
}

// ddsRunner starts confined ddsperf processes: the server (pong, sub) on
// CPU 1 and the client (ping, pub) on CPU 0, each with its config and, in
// namespace mode, in its namespace.
type ddsRunner struct {
	bin       string
	uri, cURI string    // server's and client's CYCLONEDDS_URI
	nsS, nsC  *netns.NS // nil on loopback
	pin       bool
	taskst    string
}

// ddsDomain picks a fresh DDS domain id per pair so a straggler of an
// earlier pair can never match (the config applies to any domain).
func ddsDomain() string { return strconv.Itoa(100 + rand.IntN(120)) }

// newDDSRunner writes the configs for ddsperf binary bin (ddsperfBinary):
// the loopback one, or with pair one per veth end.
func newDDSRunner(bin string, pin bool, pair *netns.Pair) (*ddsRunner, func(), error) {
	r := &ddsRunner{bin: bin, pin: pin}
	var err error
	var files []string
	cleanup := func() {
		for _, f := range files {
			os.Remove(f)
		}
	}
	write := func(cfg []byte) (string, error) {
		f, err := os.CreateTemp("", "hilrig-cyclonedds-*.xml")
		if err != nil {
			return "", fmt.Errorf("write ddsperf config: %w", err)
		}
		files = append(files, f.Name())
		if _, err := f.Write(cfg); err != nil {
			f.Close()
			return "", fmt.Errorf("write ddsperf config %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("write ddsperf config %s: %w", f.Name(), err)
		}
		return "file://" + f.Name(), nil
	}
	if pair == nil {
		if r.uri, err = write(cycloneLoopback); err != nil {
			cleanup()
			return nil, nil, err
		}
		r.cURI = r.uri
	} else {
		// The server (pong) is B's, the client (ping) A's, as in hilrig's
		// namespace ping-pong; each Cyclone knows only its veth end and
		// discovers the other by unicast.
		r.nsS, r.nsC = pair.B, pair.A
		if r.uri, err = write(cycloneOn(pair.BIface, pair.AAddr)); err == nil {
			r.cURI, err = write(cycloneOn(pair.AIface, pair.BAddr))
		}
		if err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	if pin {
		if r.taskst, err = exec.LookPath("taskset"); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("%w: --pin needs taskset (apt-get install util-linux)", ErrToolMissing)
		}
	}
	return r, cleanup, nil
}

// cycloneOn is the loopback config moved to one veth end: the interface
// instead of lo, the peer's address instead of 127.0.0.1. Multicast stays
// off.
func cycloneOn(iface string, peer netip.Addr) []byte {
	c := strings.Replace(string(cycloneLoopback), `<NetworkInterface name="lo"`, `<NetworkInterface name="`+iface+`"`, 1)
	return []byte(strings.Replace(c, `<Peer address="127.0.0.1" />`, `<Peer address="`+peer.String()+`" />`, 1))
}

// command builds one confined ddsperf invocation for the server or the
// client: domain and duration first, pinned with taskset when asked (the
// server on CPU 1, the client on 0), in the role's namespace if any, and
// CYCLONEDDS_URI replaced by the role's config whatever the caller's
// environment says (ip netns exec keeps the environment).
func (r *ddsRunner) command(ctx context.Context, server bool, domain, dur string, args []string) *exec.Cmd {
	argv := append([]string{r.bin, "-i", domain, "-D", dur}, args...)
	cpu, uri, ns := "0", r.cURI, r.nsC
	if server {
		cpu, uri, ns = "1", r.uri, r.nsS
	}
	if r.pin {
		argv = append([]string{r.taskst, "-c", cpu}, argv...)
	}
	var cmd *exec.Cmd
	if ns != nil {
		cmd = ns.Command(ctx, argv[0], argv[1:]...)
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CYCLONEDDS_URI=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "CYCLONEDDS_URI="+uri)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// pair runs server (pong/sub) then client (ping/pub) in one fresh DDS
// domain, both confined to loopback, and returns each one's stdout. Both
// processes are killed and reaped on every path.
func (r *ddsRunner) pair(ctx context.Context, d time.Duration, server, client []string) (string, string, error) {
	domain := ddsDomain()
	secs := strconv.Itoa(int(d.Seconds() + 0.5))
	srv := r.command(ctx, true, domain, strconv.Itoa(int(d.Seconds()+0.5)+3), server)
	cli := r.command(ctx, false, domain, secs, client)
	var so, co strings.Builder
	srv.Stdout, srv.Stderr = &so, &so
	cli.Stdout, cli.Stderr = &co, &co
	if err := srv.Start(); err != nil {
		return "", "", fmt.Errorf("start ddsperf %v: %w", server, err)
	}
	defer func() {
		if srv.ProcessState == nil {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		}
	}()
	if err := cli.Run(); err != nil && ctx.Err() == nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return "", "", fmt.Errorf("ddsperf %v: %w", client, err)
		}
	}
	// The server runs a little longer than the client; stop it now that
	// the client is done (it prints its last report on the way out).
	_ = srv.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = srv.Process.Kill()
		<-done
	}
	if ctx.Err() != nil {
		return "", "", ctx.Err()
	}
	return so.String(), co.String(), nil
}

var pingLine = regexp.MustCompile(`size (\d+) mean [\d.]+us min [\d.]+us 50% ([\d.]+)us 90% ([\d.]+)us 99% ([\d.]+)us max ([\d.]+)us cnt (\d+)`)

// parsePing reads ddsperf ping's one-second reports. ddsperf prints half
// of each round trip: its pong handler records (t_receive − t_send)/2
// (update_roundtrip in src/tools/ddsperf/ddsperf.c, Cyclone DDS 0.10.x,
// the version Debian ships), a one-way estimate. The figures are doubled
// here into the round trip that hilrig's ping-pong measures. Before
// issue 16 they were taken as round trips, so every hilrig/ddsperf
// latency ratio in the report was twice what it should have been.
func parsePing(out string, size int) (DDSPerfLatency, error) {
	var p50, p90, p99, mx []float64
	l := DDSPerfLatency{Size: size}
	sc := bufio.NewScanner(strings.NewReader(out))
	first := true
	for sc.Scan() {
		m := pingLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if first { // warm-up second
			first = false
			continue
		}
		// µs of half a round trip → ns of a round trip.
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return 2 * v * 1e3 }
		p50, p90, p99, mx = append(p50, f(2)), append(p90, f(3)), append(p99, f(4)), append(mx, f(5))
		c, _ := strconv.ParseInt(m[6], 10, 64)
		l.Count += c
	}
	if len(p50) == 0 {
		return l, fmt.Errorf("%w: ddsperf ping printed no latency report after warm-up (run longer?); output:\n%s", ErrPeer, tail(out))
	}
	l.Reports = len(p50)
	l.P50, l.P90, l.P99 = int64(median(p50)), int64(median(p90)), int64(median(p99))
	l.Max = int64(slices.Max(mx))
	return l, nil
}

var subLine = regexp.MustCompile(`size (\d+) total \d+ lost \d+ delta (\d+) lost (\d+) rate ([\d.]+) kS/s ([\d.]+) Mb/s`)

// parseSub reads ddsperf sub's one-second reports.
func parseSub(out string, size int, reliable bool) (DDSPerfRate, error) {
	r := DDSPerfRate{Size: size, Reliable: reliable}
	var rates, mbs []float64
	var got, lost float64
	first := true
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := subLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if first {
			first = false
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		if f(2) == 0 { // after the publisher left
			continue
		}
		got, lost = got+f(2), lost+f(3)
		rates, mbs = append(rates, f(4)*1e3), append(mbs, f(5)/8)
	}
	if len(rates) == 0 {
		return r, fmt.Errorf("%w: ddsperf sub printed no rate report after warm-up; output:\n%s", ErrPeer, tail(out))
	}
	r.Reports = len(rates)
	r.RecvPerSec, r.MBps = mean(rates), mean(mbs)
	if got+lost > 0 {
		r.LostPct = 100 * lost / (got + lost)
	}
	return r, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// DDSPerf runs Cyclone DDS ddsperf (confined to loopback) and hilrig's UDP
// transport on loopback one after the other in one invocation: 16 B and
// 1 MiB round trip, 1 MiB reliable throughput, 16 B best-effort rate; it
// reports hilrig/ddsperf ratios. Blocks; every process is reaped.
func DDSPerf(ctx context.Context, c DDSPerfConfig) (*DDSPerfReport, error) {
	if c.Duration == 0 {
		c.Duration = 3 * time.Second
	}
	if c.RoundTrips == 0 {
		c.RoundTrips = 20000
	}
	if c.Duration < 2*time.Second {
		return nil, fmt.Errorf("%w: --duration %v: ddsperf reports once a second and the first is warm-up; want >= 2s", ErrUsage, c.Duration)
	}
	bin, err := ddsperfBinary() // before any namespace is made
	if err != nil {
		return nil, err
	}
	var pair *netns.Pair
	if c.NetNS {
		p, err := netns.NewPair(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: --netns: %v", ErrUnavailable, err)
		}
		defer p.Close()
		pair = p
	}
	r, cleanup, err := newDDSRunner(bin, c.Pin, pair)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &DDSPerfReport{KernelTracing: kernelTracing(), NetNS: c.NetNS}
	ping, pong := -1, -1
	if c.Pin {
		ping, pong = 0, 1
	}
	for _, size := range []int{16, 1 << 20} {
		_, out, err := r.pair(ctx, c.Duration, []string{"pong"}, []string{"ping", "size", strconv.Itoa(size)})
		if err != nil {
			return nil, err
		}
		l, err := parsePing(out, size)
		if err != nil {
			return nil, err
		}
		rep.DDSLatency = append(rep.DDSLatency, l)
		n := c.RoundTrips
		if size >= 1<<20 {
			n = max(n/20, 200)
		}
		// ddsperf's ping/pong sleeps in a listener: compare with hilrig's
		// sleeping (futex) receiver, not its spinning one. ddsperf is
		// RELIABLE KEEP_LAST 1 (ddsperf.c): its writer never waits for
		// acknowledgements (strace: one sendmsg per message, no ACKNACK
		// per sample), and so is hilrig's keep-last UDP
		// (UDPConfig.KeepLast); its threads block in recvmsg as C
		// threads do, and so do hilrig's dedicated readers
		// (UDPConfig.DedicatedReader) — together the like-for-like row,
		// which carries the targets.
		// hilrig's default reliable mode is a send window, stricter: at
		// window 1 every message waits for the acknowledgement of the one
		// before; the default window 16 acknowledges every 8th message.
		// Both are reported beside it.
		for _, v := range ddsVariants {
			pr, err := PingPong(ctx, PingPongConfig{Transport: TUDP, Wait: kind.WaitFutex, Reliable: true, Depth: v.depth, KeepLast: v.keepLast, Dedicated: v.dedicated,
				Sizes: []int{size}, RoundTrips: n, Warmup: min(n/10, 1000), Pin: c.Pin, PingCPU: ping, PongCPU: pong, NetNS: c.NetNS, Launcher: c.Launcher})
			if err != nil {
				return nil, err
			}
			h := pr.Results[0]
			rep.HilrigLatency = append(rep.HilrigLatency, h)
			// The targets (issue 16) ride on the like-for-like row: at
			// 16 B p50 and p99 ≤ 1×; at 1 MiB p50 ≤ 0.8×.
			p50t, p99t := "", ""
			if v.keepLast && v.dedicated {
				p50t, p99t = "<= 1", "<= 1"
				if size > 16 {
					p50t, p99t = "<= 0.8", ""
				}
			}
			rep.Ratios = append(rep.Ratios,
				ThroughputRatio{What: fmt.Sprintf("hilrig udp %s / ddsperf round trip p50 at %s (lower is better)", qosName(h), FormatSize(size)),
					Value: float64(h.RTT.P50) / float64(l.P50), Target: p50t},
				ThroughputRatio{What: fmt.Sprintf("hilrig udp %s / ddsperf round trip p99 at %s", qosName(h), FormatSize(size)),
					Value: float64(h.RTT.P99) / float64(l.P99), Target: p99t})
		}
	}
	if c.NetNS {
		return rep, nil // round trips only: see DDSPerfConfig.NetNS
	}
	// 1 MiB reliable throughput.
	subOut, _, err := r.pair(ctx, c.Duration, []string{"sub"}, []string{"pub", "size", strconv.Itoa(1 << 20)})
	if err != nil {
		return nil, err
	}
	big, err := parseSub(subOut, 1<<20, true)
	if err != nil {
		return nil, err
	}
	// 16 B best effort.
	subOut, _, err = r.pair(ctx, c.Duration, []string{"-u", "sub"}, []string{"-u", "pub", "size", "16"})
	if err != nil {
		return nil, err
	}
	small, err := parseSub(subOut, 16, false)
	if err != nil {
		return nil, err
	}
	rep.DDSRate = []DDSPerfRate{big, small}
	tc := ThroughputConfig{Duration: c.Duration, Pin: c.Pin, PubCPU: ping, SubCPU: pong, Launcher: c.Launcher}
	tc.defaults()
	hb, err := tc.stream(ctx, TUDP, 1<<20, true, c.Duration)
	if err != nil {
		return nil, err
	}
	hs, err := tc.stream(ctx, TUDP, 16, false, c.Duration)
	if err != nil {
		return nil, err
	}
	// ddsperf's publisher packs many samples into one datagram (Cyclone's
	// message packing, up to its default MaxMessageSize of 14720 B: ~100+
	// samples per sendmsg measured with strace here), so the like-for-like
	// hilrig figure has its publisher batching on, with the same datagram
	// bound. The unbatched row stays for comparison.
	tc.UDPBatch = ddsMaxMessageSize
	hsb, err := tc.stream(ctx, TUDP, 16, false, c.Duration)
	if err != nil {
		return nil, err
	}
	hsb.Test += fmt.Sprintf(" batched %d B", ddsMaxMessageSize)
	rep.HilrigRate = []ThroughputResult{hb, hs, hsb}
	rep.Ratios = append(rep.Ratios,
		ThroughputRatio{What: "hilrig udp / ddsperf reliable 1MiB MB/s (higher is better)", Value: hb.MBps / big.MBps, Target: ">= 1.9"},
		ThroughputRatio{What: "hilrig udp / ddsperf best-effort 16B received msgs/s, hilrig unbatched (one datagram per message; ddsperf packs)", Value: hs.RecvPerSec / small.RecvPerSec},
		ThroughputRatio{What: fmt.Sprintf("hilrig udp batched %d B / ddsperf best-effort 16B received msgs/s (both pack; higher is better)", ddsMaxMessageSize), Value: hsb.RecvPerSec / small.RecvPerSec, Target: ">= 1"})
	return rep, nil
}

// udpReliableDepth is the UDP transport's default reliable depth
// (udp.SenderConfig.Depth).
const udpReliableDepth = 16

// ddsVariants are the hilrig QoS set beside ddsperf's RELIABLE KEEP_LAST 1
// round trip: the same (keep-last 1) with dedicated readers first —
// ddsperf's receive threads are C threads blocked in recvmsg, and the
// bench's loops are alone on theirs — then keep-last 1 with ordinary
// waits, then the send windows 1 and 16.
var ddsVariants = []struct {
	depth               int
	keepLast, dedicated bool
}{{1, true, true}, {1, true, false}, {1, false, false}, {udpReliableDepth, false, false}}

// qosName names a middleware result's reliability (and a dedicated
// reader) for the tables.
func qosName(h Result) string {
	q := "best effort"
	if r := reliableQoS(h); r != "" {
		q = "reliable " + r
	}
	if h.Dedicated {
		q += ", dedicated reader"
	}
	return q
}

// reliableQoS is a reliable result's history mode and depth, "keep-last
// N" or "window N"; "" for best effort.
func reliableQoS(h Result) string {
	switch {
	case !h.Reliable:
		return ""
	case h.KeepLast:
		return fmt.Sprintf("keep-last %d", h.Depth)
	default:
		return fmt.Sprintf("window %d", h.Depth)
	}
}

// ddsMaxMessageSize is Cyclone DDS 0.10's default General/MaxMessageSize:
// the most it packs into one datagram.
const ddsMaxMessageSize = 14720

// WriteTable prints the side-by-side report.
func (r *DDSPerfReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	where := "round trip"
	if r.NetNS {
		where = "round trip across the namespace veth"
	}
	fmt.Fprintf(tw, "%s\tsize\tcount\tp50 µs\tp90 µs\tp99 µs\tmax µs\t\n", where)
	for _, d := range r.DDSLatency {
		fmt.Fprintf(tw, "ddsperf (printed × 2)\t%s\t%d\t%s\t%s\t%s\t%s\t\n", FormatSize(d.Size), d.Count, us(d.P50), us(d.P90), us(d.P99), us(d.Max))
		for _, h := range r.HilrigLatency {
			if h.Size != d.Size {
				continue
			}
			name := "hilrig udp/" + h.Wait + " " + qosName(h)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", name, FormatSize(h.Size), h.RTT.Count, us(h.RTT.P50), us(h.RTT.P90), us(h.RTT.P99), us(h.RTT.Max))
		}
	}
	if len(r.DDSRate) > 0 {
		fmt.Fprintf(tw, "\t\t\t\t\t\t\t\n")
		fmt.Fprintf(tw, "stream\tsize\tQoS\trecv/s\tMB/s\tlost %%\t\t\n")
	}
	for i, d := range r.DDSRate {
		q := "best effort"
		if d.Reliable {
			q = "reliable"
		}
		fmt.Fprintf(tw, "ddsperf\t%s\t%s\t%.0f\t%.1f\t%.1f\t\t\n", FormatSize(d.Size), q, d.RecvPerSec, d.MBps, d.LostPct)
		// The last ddsperf row (16 B) is followed by every remaining
		// hilrig row (unbatched and batched).
		hs := r.HilrigRate[min(i, len(r.HilrigRate)):]
		if i < len(r.DDSRate)-1 {
			hs = hs[:min(1, len(hs))]
		}
		for _, h := range hs {
			lost := 0.0
			if h.Sent > 0 {
				lost = 100 * float64(h.Lost) / float64(h.Sent)
			}
			name := "hilrig udp"
			if h.Test != "" && strings.Contains(h.Test, "batched") {
				name = "hilrig udp batched"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.1f\t%.1f\t\t\n", name, FormatSize(h.Size), q, h.RecvPerSec, h.MBps, lost)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "ratio %s: %.2f (target %s)\n", q.What, q.Value, orDash(q.Target))
	}
	writeTracingWarning(w, r.KernelTracing)
	if r.NetNS {
		_, err := fmt.Fprintln(w, "ddsperf ran with CYCLONEDDS_URI = the embedded config moved to each namespace's veth end (that interface only, no multicast, unicast discovery to the other end)")
		return err
	}
	_, err := fmt.Fprintln(w, "ddsperf ran with CYCLONEDDS_URI = the embedded loopback-only config (lo, no multicast, unicast discovery to 127.0.0.1)")
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mainDDSPerf(ctx context.Context, l Launcher, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig bench ddsperf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c DDSPerfConfig
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "length of each ddsperf run and hilrig stream")
	fs.IntVar(&c.RoundTrips, "n", 20000, "hilrig round trips at 16 B (1 MiB uses n/20)")
	fs.BoolVar(&c.NetNS, "netns", false, "round trips across a veth between two network namespaces made for the run (root); each Cyclone confined to its veth end; no streams")
	fs.BoolVar(&c.Pin, "pin", false, "pin the two ends to CPUs 0 and 1: hilrig's loop threads, and whole ddsperf processes via taskset (all of ddsperf's threads then share one CPU, which slows it: compare unpinned first)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil || fsHelp(args) {
		return err
	}
	c.Launcher = l
	rep, err := DDSPerf(ctx, c)
	if err != nil {
		return err
	}
	rep.Command = "hilrig bench ddsperf " + strings.Join(args, " ")
	return writeReport(stdout, *asJSON, rep)
}
