package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/internal/kind"
)

// Main is "hilrig bench": it parses args (the sub-command and its flags),
// runs the benchmark and prints the result to stdout. Errors from bad flags
// wrap ErrUsage. The hidden sub-modes "pong" and "sink" are the other end of
// a run, started by the parent through l. Blocks until done or ctx ends.
func Main(ctx context.Context, l Launcher, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	type mainFunc func(context.Context, Launcher, []string, io.Writer, io.Writer) error
	withLauncher := func(f mainFunc) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, rest []string, stdout, stderr io.Writer) error {
			return f(ctx, l, rest, stdout, stderr)
		}
	}
	// pong and sink are not in the usage: only a parent run starts them.
	child := func(mode string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, rest []string, stdout, _ io.Writer) error {
			if len(rest) != 1 {
				return fmt.Errorf("%w: %s is internal: hilrig bench %s <json spec>", ErrUsage, mode, mode)
			}
			return runChild(ctx, mode, rest[0], stdin, stdout)
		}
	}
	return cli.Set{Prog: "hilrig bench", Usage: usage, Commands: []cli.Command{
		{Name: "pingpong", Run: withLauncher(mainPingPong)},
		{Name: "throughput", Run: withLauncher(mainThroughput)},
		{Name: "ddsperf", Run: withLauncher(mainDDSPerf)},
		{Name: "pong", Run: child("pong")},
		{Name: "sink", Run: child("sink")},
	}}.Run(ctx, args, stdout, stderr)
}

const usage = `usage: hilrig bench <sub-command> [flags]

  pingpong    round-trip latency between two processes (or goroutines):
              --transport shm|intra|udp|raw-spin|raw-futex|uds|raw-udp|raw-spin-intra|chan
              --compare runs the matching baseline alternately and prints the ratio
              --transport udp --key FILE authenticates every datagram; --compare-auth
              prints the ratio keyed/unkeyed, alternating rounds in one run
  throughput  1 MiB reliable MB/s + CPU%, 16 B best-effort msgs/s (shm, udp) with
              memcpy / raw-udp baselines in the same run
  ddsperf     Cyclone DDS ddsperf (loopback-confined) side by side with hilrig udp

Run "hilrig bench <sub-command> -h" for its flags.`

// sizeFlag is a repeatable --size that also accepts comma lists.
type sizeFlag struct{ v *[]int }

func (s sizeFlag) String() string {
	if s.v == nil {
		return ""
	}
	var p []string
	for _, n := range *s.v {
		p = append(p, FormatSize(n))
	}
	return strings.Join(p, ",")
}

func (s sizeFlag) Set(v string) error {
	n, err := ParseSizes(v)
	if err != nil {
		return err
	}
	*s.v = append(*s.v, n...)
	return nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	return nil
}

// pinFlags resolves --pin/--ping-cpu/--pong-cpu: naming a CPU implies
// --pin; --pin alone means ping on CPU 0, pong on CPU 1.
func pinFlags(pin bool, ping, pong int) (bool, int, int) {
	pin = pin || ping >= 0 || pong >= 0
	if pin {
		if ping < 0 {
			ping = 0
		}
		if pong < 0 {
			pong = 1
		}
	}
	return pin, ping, pong
}

func mainPingPong(ctx context.Context, l Launcher, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig bench pingpong", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c PingPongConfig
	fs.StringVar(&c.Transport, "transport", TShm, "transport: "+strings.Join(Transports, ", "))
	fs.TextVar(&c.Wait, "wait", kind.WaitSpin, "middleware wait strategy: spin, futex, hybrid")
	fs.StringVar(&c.Path, "path", "copy", "middleware publish path: copy (Send) or loan (zero-copy)")
	fs.Var(sizeFlag{&c.Sizes}, "size", "payload size, repeatable or comma list (16,1KiB,64KiB,1MiB,10MiB); default 16")
	fs.IntVar(&c.RoundTrips, "n", 20000, "timed round trips per size")
	fs.IntVar(&c.Warmup, "warmup", 1000, "untimed round trips first")
	pin := fs.Bool("pin", false, "pin ping to CPU 0 and pong to CPU 1 (unless --ping-cpu/--pong-cpu say otherwise)")
	fs.IntVar(&c.PingCPU, "ping-cpu", -1, "CPU for the ping thread (implies --pin; -1: 0 with --pin, else not pinned)")
	fs.IntVar(&c.PongCPU, "pong-cpu", -1, "CPU for the pong thread (implies --pin; -1: 1 with --pin, else not pinned)")
	fs.BoolVar(&c.NetNS, "netns", false, "udp/raw-udp: run the two ends in two network namespaces joined by a veth (root)")
	fs.BoolVar(&c.Reliable, "reliable", false, "middleware topics use Reliable QoS (default best effort)")
	fs.IntVar(&c.Depth, "depth", 0, "middleware contract history depth (0: 1; the reliable UDP send window)")
	fs.BoolVar(&c.KeepLast, "keep-last", false, "udp --reliable: the depth is a keep-last history, not a send window (DDS RELIABLE KEEP_LAST; never waits for acknowledgements)")
	fs.BoolVar(&c.Dedicated, "dedicated-reader", false, "the subscribers' consumers wait holding their Go processor (udp: UDPConfig.DedicatedReader, shm/intra: SubscriberOptions.DedicatedWait), as C threads blocked in recvmsg or futex(2) do")
	fs.IntVar(&c.Datagram, "datagram", 0, "raw-udp payload bytes per datagram (0: 65507 on loopback, 1472 across --netns, the middleware's packet sizes)")
	fs.BoolVar(&c.RawGSO, "raw-gso", true, "raw-udp: send a message's datagrams in runs (one sendmsg with UDP_SEGMENT each) and read them with UDP_GRO, as the middleware does (applies when two datagrams fit a run: --netns, or --datagram <= 32753); false: one write per datagram")
	fs.BoolVar(&c.Compare, "compare", false, "also run the matching baseline, alternating rounds, and print the ratio")
	fs.IntVar(&c.Rounds, "rounds", 4, "compare: number of alternating rounds (n is split across them)")
	fs.StringVar(&c.KeyFile, "key", "", "udp: domain key file (hex, mode 0600): authenticate every datagram (docs/security.md)")
	fs.BoolVar(&c.CompareAuth, "compare-auth", false, "udp: measure with the domain key against without, alternating rounds, and print the ratio (a random key when --key is not given)")
	fs.BoolVar(&c.Probe, "probe", true, "measure a cache-line round trip before and after and flag disturbed runs")
	fs.StringVar(&c.Record, "record", "", "write every timed round trip to this MCAP file (created, never overwritten): send stamp and RTT, one channel per size")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := parse(fs, args); err != nil || fsHelp(args) {
		return err
	}
	c.Pin, c.PingCPU, c.PongCPU = pinFlags(*pin, c.PingCPU, c.PongCPU)
	c.Launcher = l
	rep, err := PingPong(ctx, c)
	if err != nil {
		return err
	}
	rep.Command = "hilrig bench pingpong " + strings.Join(args, " ")
	return writeReport(stdout, *asJSON, rep)
}

func fsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}
