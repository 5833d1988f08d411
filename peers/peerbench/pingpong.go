// Package peerbench is `hilrig-peer bench pingpong --transport PEER`: the
// same ping-pong as hilrig's own (an echo agent and a pinger agent, one
// ping in flight, RTT on the pinger's CLOCK_MONOTONIC), run on a peer
// middleware and on hilrig's transport of the same class in one
// invocation, with the ratios hilrig/peer. It drives real agent processes
// (the peer binary's `agent` sub-command) over the agent protocol, so the
// peer cases run exactly the endpoints the suites run. Pure Go; the cgo
// adapters live in the agent binary it starts.
package peerbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/peers/iceoryx/roudi"
	"github.com/hilrig/hilrig/report"
)

// ErrUsage marks bad flags.
var ErrUsage = errors.New("peerbench: usage")

// Class is a peer's transport class: which hilrig transport it is
// compared with.
func Class(peer string) string {
	switch peer {
	case "iceoryx", "fastdds-shm":
		return "shm"
	}
	return "udp-lo"
}

// Options configures a ping-pong comparison.
type Options struct {
	// Exe is the binary whose `agent` sub-command runs the endpoints.
	Exe string
	// Peers are the peer middlewares to compare with hilrig.
	Peers []string
	Sizes []int
	// Count is the number of pings per case (1 MiB cases use Count/10,
	// at least 200); WarmUp pings are not recorded.
	Count, WarmUp int
	// Wait is the receivers' wait strategy: futex (sleeping, the zero
	// value) or spin.
	Wait middleware.WaitStrategy
	// CPUs pins the pinger and the echo (nil: no pinning).
	CPUs     []int
	Reliable bool
	// Started, if set, is called with the echo's and the pinger's
	// processes once both endpoints run (fault injection in tests).
	Started func(echo, pinger *os.Process)
	// EchoExe and PingerExe, if set, replace Exe for that agent, and
	// EchoNet and PingerNet are the agents' peer networks (nil:
	// loopback), as the rig gives them to boards in two network
	// namespaces joined by a veth link (tests: each agent started in its
	// own namespace).
	EchoExe, PingerExe string
	EchoNet, PingerNet *agentproto.PeerNet
}

// Result is one case.
type Result struct {
	Middleware, Class string
	Size              int
	RTT               report.Summary
	Sent, Lost        uint64
	// CPUNs is the two agents' CPU time per ping; RSS the larger RSS.
	CPUNs       float64
	RSSBytes    int64
	DiscoveryNs int64
	// Peer describes the peer's configuration and transport.
	Peer string
}

// agentProc is one agent child process.
type agentProc struct {
	cmd  *exec.Cmd
	enc  *agentproto.Encoder
	in   io.WriteCloser
	msgs chan *agentproto.Msg
	// ended is closed when the agent's output ends (it exited or died, or
	// wrote what the decoder refuses); endErr, set before, says why.
	ended  chan struct{}
	endErr error
	name   string
	// mw is the middleware its endpoints run on, for errors.
	mw string
}

func startAgent(ctx context.Context, exe, board, mw string) (*agentProc, error) {
	cmd := exec.Command(exe, "agent", "-board", board)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	// A DDS domain of this bench only: other DDS processes on the host
	// never match its endpoints.
	cmd.Env = append(os.Environ(), "HILRIG_DDS_DOMAIN="+strconv.Itoa(100+os.Getpid()%100))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agent %s: %w", board, err)
	}
	a := &agentProc{cmd: cmd, enc: agentproto.NewEncoder(in), in: in, msgs: make(chan *agentproto.Msg, 256), ended: make(chan struct{}), name: board, mw: mw}
	go func() {
		dec := agentproto.NewDecoder(out)
		for {
			m, err := dec.Next()
			if err != nil {
				a.endErr = err
				close(a.ended)
				close(a.msgs)
				return
			}
			a.msgs <- m
		}
	}()
	if _, err := a.expect(ctx, agentproto.KindHello, 10*time.Second, nil); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// ErrAgentDied: an agent process ended in the middle of a case.
var ErrAgentDied = errors.New("agent process ended mid-run")

// died is the error for an agent whose output ended.
// The output can end before the process does (a line the decoder
// refuses, a closed stdout): the process gets diedGrace to exit, then is
// killed, so a case never hangs here (CI saw one wait 10 minutes).
func (a *agentProc) died(waiting agentproto.Kind) error {
	a.waitOrKill(diedGrace)
	return fmt.Errorf("board %s, peer %s: %w (%v; its output: %v) while waiting for %s", a.name, a.mw, ErrAgentDied, a.cmd.ProcessState, a.endErr, waiting)
}

// diedGrace is how long an agent whose output ended may take to exit.
const diedGrace = 5 * time.Second

// expect waits for the next message of kind, skipping windows; an error
// message, the agent's end or the end of other (the far side, may be
// nil) is an error naming the board and the peer.
func (a *agentProc) expect(ctx context.Context, kind agentproto.Kind, timeout time.Duration, other *agentProc) (*agentproto.Msg, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var otherEnded chan struct{}
	if other != nil {
		otherEnded = other.ended
	}
	for {
		select {
		case m, ok := <-a.msgs:
			if !ok {
				return nil, a.died(kind)
			}
			switch {
			case m.Kind == kind:
				return m, nil
			case m.Kind == agentproto.KindError:
				return nil, fmt.Errorf("board %s, peer %s: %s", a.name, a.mw, m.Error.Message)
			case m.Kind == agentproto.KindFinal && m.Final.Reason == agentproto.EndError:
				return nil, fmt.Errorf("board %s, peer %s: endpoint %s: %s", a.name, a.mw, m.Final.Endpoint, m.Final.Error)
			}
		case <-otherEnded:
			return nil, other.died(kind)
		case <-t.C:
			return nil, fmt.Errorf("board %s, peer %s: no %s within %v", a.name, a.mw, kind, timeout)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (a *agentProc) close() {
	a.enc.Encode(agentproto.NewStop(""))
	a.in.Close()
	a.waitOrKill(10 * time.Second)
}

// waitOrKill waits up to grace for the agent process to exit, then kills
// it and reaps it.
func (a *agentProc) waitOrKill(grace time.Duration) {
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// contracts are the ping and reply contracts of a case as the echo and
// the pinger see them (hilrig UDP: listen on one side, peers on the other).
func contracts(mw, class string, size int, reliable bool, id string) (echoIn, echoOut, pingOut, pingIn middleware.Contract, err error) {
	base := middleware.Contract{MaxPayload: size, Depth: 16}
	if reliable {
		base.Reliability = middleware.Reliable
	}
	ping, pong := base, base
	ping.Topic, pong.Topic = "bench/ping/"+id, "bench/pong/"+id
	echoIn, echoOut, pingOut, pingIn = ping, pong, ping, pong
	if agentproto.IsPeer(mw) {
		return
	}
	if class == "shm" {
		for _, c := range []*middleware.Contract{&echoIn, &echoOut, &pingOut, &pingIn} {
			c.Transport = middleware.TransportShm
		}
		return
	}
	p1, err := freePort()
	if err != nil {
		return
	}
	p2, err := freePort()
	if err != nil {
		return
	}
	a1, a2 := "127.0.0.1:"+strconv.Itoa(p1), "127.0.0.1:"+strconv.Itoa(p2)
	for _, c := range []*middleware.Contract{&echoIn, &echoOut, &pingOut, &pingIn} {
		c.Transport = middleware.TransportUDP
	}
	echoIn.UDP.Listen, pingOut.UDP.Peers = a1, []string{a1}
	pingIn.UDP.Listen, echoOut.UDP.Peers = a2, []string{a2}
	return
}

// RunCase runs one ping-pong on mw ("hilrig" on class's transport, or a
// peer) with fresh agents.
func RunCase(ctx context.Context, o Options, mw, class string, size int) (*Result, error) {
	count := o.Count
	if size >= 1<<20 {
		count = max(o.Count/10, 200)
	}
	id := fmt.Sprintf("%s-%d-%d", mw, size, os.Getpid())
	echoIn, echoOut, pingOut, pingIn, err := contracts(mw, class, size, o.Reliable, id)
	if err != nil {
		return nil, err
	}
	echoExe, pingerExe := o.Exe, o.Exe
	if o.EchoExe != "" {
		echoExe = o.EchoExe
	}
	if o.PingerExe != "" {
		pingerExe = o.PingerExe
	}
	echo, err := startAgent(ctx, echoExe, "echo-"+mw, mw)
	if err != nil {
		return nil, err
	}
	defer echo.close()
	pinger, err := startAgent(ctx, pingerExe, "ping-"+mw, mw)
	if err != nil {
		return nil, err
	}
	defer pinger.close()
	var cpuE, cpuP *int
	if len(o.CPUs) == 2 {
		cpuP, cpuE = &o.CPUs[0], &o.CPUs[1]
	}
	mwName := mw
	if mw == agentproto.MiddlewareHilrig {
		mwName = ""
	}
	domain := "pb" + strconv.Itoa(os.Getpid())
	if err := echo.enc.Encode(agentproto.NewStart(agentproto.Start{Endpoint: "echo", Role: agentproto.Echo, Middleware: mwName, Domain: domain,
		Contract: echoIn, Echo: &agentproto.EchoSpec{Reply: echoOut}, Wait: o.Wait, CPU: cpuE, Count: uint64(count), PeerNet: o.EchoNet})); err != nil {
		return nil, err
	}
	if _, err := echo.expect(ctx, agentproto.KindStarted, 20*time.Second, nil); err != nil {
		return nil, err
	}
	if err := pinger.enc.Encode(agentproto.NewStart(agentproto.Start{Endpoint: "ping", Role: agentproto.Pinger, Middleware: mwName, Domain: domain,
		Contract: pingOut, Echo: &agentproto.EchoSpec{Reply: pingIn}, Payload: size, Count: uint64(count), WarmUp: uint64(o.WarmUp), Wait: o.Wait, CPU: cpuP, PeerNet: o.PingerNet})); err != nil {
		return nil, err
	}
	st, err := pinger.expect(ctx, agentproto.KindStarted, 30*time.Second, echo)
	if err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(echo.cmd.Process, pinger.cmd.Process)
	}
	fin, err := pinger.expect(ctx, agentproto.KindFinal, 10*time.Minute, echo)
	if err != nil {
		return nil, err
	}
	f := fin.Final
	// The echo ends by itself only if every ping reached it (best effort
	// may lose some) and lingers after: stop it now.
	if err := echo.enc.Encode(agentproto.NewStop("echo")); err != nil {
		return nil, err
	}
	ef, err := echo.expect(ctx, agentproto.KindFinal, 30*time.Second, nil)
	if err != nil {
		return nil, err
	}
	if f.Reason != agentproto.EndCount {
		return nil, fmt.Errorf("board %s, peer %s: pinger ended %s after %d of %d pings (%s)", pinger.name, mw, f.Reason, f.Sent, count, f.Error)
	}
	if f.Latency == nil || f.Latency.Count() == 0 {
		return nil, fmt.Errorf("%s %d B: no round trips recorded (sent %d, lost %d, %s %s)", mw, size, f.Sent, f.Lost, f.Reason, f.Error)
	}
	r := &Result{Middleware: mw, Class: class, Size: size, RTT: f.Latency.Summary(), Sent: f.Sent, Lost: f.Lost,
		RSSBytes: max(f.MaxRSSBytes, ef.Final.MaxRSSBytes), DiscoveryNs: st.Started.DiscoveryNs, Peer: st.Started.Peer}
	if f.Sent > 0 {
		r.CPUNs = float64(f.CPUUserNs+f.CPUSysNs+ef.Final.CPUUserNs+ef.Final.CPUSysNs) / float64(f.Sent)
	}
	return r, nil
}

// Compare runs, for every size, hilrig on each class the peers need and
// every peer, and returns the results in that order.
func Compare(ctx context.Context, o Options, progress io.Writer) ([]*Result, error) {
	var classes []string
	for _, p := range o.Peers {
		c := Class(p)
		if !strings.Contains(strings.Join(classes, ","), c) {
			classes = append(classes, c)
		}
	}
	for _, p := range o.Peers {
		if p == "iceoryx" {
			up, err := roudi.Running()
			if err != nil {
				return nil, err
			}
			if !up {
				r, err := roudi.Start(ctx, maxInt(o.Sizes))
				if err != nil {
					return nil, err
				}
				defer r.Stop()
				fmt.Fprintf(progress, "# iox-roudi started (pid %d), sized for %d B\n", r.PID(), maxInt(o.Sizes))
			}
		}
	}
	var out []*Result
	for _, size := range o.Sizes {
		for _, c := range classes {
			r, err := RunCase(ctx, o, agentproto.MiddlewareHilrig, c, size)
			if err != nil {
				return out, fmt.Errorf("hilrig %s %d B: %w", c, size, err)
			}
			out = append(out, r)
			fmt.Fprintf(progress, "# hilrig/%s %d B: p50 %d ns\n", c, size, r.RTT.P50)
		}
		for _, p := range o.Peers {
			r, err := RunCase(ctx, o, p, Class(p), size)
			if err != nil {
				return out, fmt.Errorf("%s %d B: %w", p, size, err)
			}
			out = append(out, r)
			fmt.Fprintf(progress, "# %s %d B: p50 %d ns\n", p, size, r.RTT.P50)
		}
	}
	return out, nil
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func us(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e3) }

// ratio is hilrig/peer (< 1: hilrig is faster).
func ratio(h, p int64) string {
	if p <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(h)/float64(p))
}

// Table writes the comparison: one row per case, the peers' rows with
// ratios hilrig/peer of the same class and size, then each peer's
// configuration.
func Table(w io.Writer, rs []*Result) {
	base := map[string]*Result{}
	for _, r := range rs {
		if r.Middleware == agentproto.MiddlewareHilrig {
			base[r.Class+"/"+strconv.Itoa(r.Size)] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "middleware\tclass\tsize B\tRTT p50 µs\tp99 µs\tp99.9 µs\tmax µs\tjitter µs\tlost\tCPU µs/ping\tRSS MiB\tdisc ms\thilrig/peer p50\thilrig/peer p99\t")
	for _, r := range rs {
		rp50, rp99 := "", ""
		if b := base[r.Class+"/"+strconv.Itoa(r.Size)]; b != nil && r != b {
			rp50, rp99 = ratio(b.RTT.P50, r.RTT.P50), ratio(b.RTT.P99, r.RTT.P99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", r.Middleware, r.Class, r.Size,
			us(r.RTT.P50), us(r.RTT.P99), us(r.RTT.P999), us(r.RTT.Max), us(r.RTT.Jitter), r.Lost, r.Sent,
			r.CPUNs/1e3, float64(r.RSSBytes)/(1<<20), float64(r.DiscoveryNs)/1e6, rp50, rp99)
	}
	tw.Flush()
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Peer != "" && !seen[r.Middleware] {
			seen[r.Middleware] = true
			fmt.Fprintf(w, "# %s: %s\n", r.Middleware, r.Peer)
		}
	}
}

// Main is `bench pingpong --transport PEER[,PEER] [flags]`.
func Main(ctx context.Context, exe string, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "pingpong" {
		return fmt.Errorf("%w: want: bench pingpong --transport cyclonedds|fastdds-shm|fastdds-udp|iceoryx[,…]", ErrUsage)
	}
	fs := flag.NewFlagSet("bench pingpong", flag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", "", "peer middlewares, comma-separated (fastdds = fastdds-shm,fastdds-udp)")
	sizes := fs.String("sizes", "64,4096,1048576", "payload sizes in bytes (wire sizes, peer header included)")
	count := fs.Int("count", 5000, "pings per case (1 MiB: count/10, at least 200)")
	warm := fs.Int("warmup", 100, "pings not recorded")
	var wait middleware.WaitStrategy
	fs.TextVar(&wait, "wait", middleware.WaitFutex, "receivers' wait: futex (sleeping) or spin")
	cpus := fs.String("cpus", "0,1", "CPUs of the pinger and the echo ('' = no pinning)")
	reliable := fs.Bool("reliable", false, "reliable QoS (default best effort)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	o := Options{Exe: exe, Count: *count, WarmUp: *warm, Wait: wait, Reliable: *reliable}
	for _, t := range strings.Split(*transport, ",") {
		switch t {
		case "":
		case "fastdds":
			o.Peers = append(o.Peers, "fastdds-shm", "fastdds-udp")
		default:
			o.Peers = append(o.Peers, t)
		}
	}
	if len(o.Peers) == 0 {
		return fmt.Errorf("%w: --transport: name at least one peer", ErrUsage)
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < agentproto.PeerHeaderBytes+agentproto.PingHeaderBytes {
			return fmt.Errorf("%w: --sizes %q: want sizes ≥ %d", ErrUsage, s, agentproto.PeerHeaderBytes+agentproto.PingHeaderBytes)
		}
		o.Sizes = append(o.Sizes, n)
	}
	if *cpus != "" {
		for _, s := range strings.Split(*cpus, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%w: --cpus %q", ErrUsage, *cpus)
			}
			o.CPUs = append(o.CPUs, n)
		}
		if len(o.CPUs) != 2 {
			return fmt.Errorf("%w: --cpus: want two CPUs (pinger, echo)", ErrUsage)
		}
	}
	rs, err := Compare(ctx, o, stderr)
	Table(stdout, rs)
	return err
}
