package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/bench"
	"github.com/hilrig/hilrig/deploy"
)

// peerTransports are the --transport values of `hilrig bench pingpong`
// that name a peer middleware, and the peer build tag each needs.
var peerTransports = map[string]string{
	"cyclonedds": "cyclonedds", "fastdds": "fastdds", "fastdds-shm": "fastdds", "fastdds-udp": "fastdds", "iceoryx": "iceoryx",
}

// errPeerBench: a peer ping-pong request this binary cannot pass on.
var errPeerBench = errors.New("hilrig bench pingpong (peer)")

// peerPingPong reports whether args (after "bench") ask for a ping-pong on
// peers, and if so returns the peer bench's argument list
// (`hilrig-peer bench pingpong …`) and the build tags it needs. The
// default hilrig binary is CGO-free and links no peer, so a peer ping-pong
// runs in the peer agent binary (cmd/hilrig-peer), which measures hilrig's
// transport of each class beside the peers in the same run. Flags map as
// --size → --sizes, -n → --count, --warmup, --wait, --reliable, and
// --pin/--ping-cpu/--pong-cpu → --cpus; any other flag is refused.
func peerPingPong(args []string) (peerArgs, tags []string, ok bool, err error) {
	if len(args) == 0 || args[0] != "pingpong" {
		return nil, nil, false, nil
	}
	fs := flag.NewFlagSet("bench pingpong", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	transport := fs.String("transport", "", "")
	var sizes []string
	fs.Func("size", "", func(s string) error { sizes = append(sizes, s); return nil })
	n := fs.Int("n", 0, "")
	warm := fs.Int("warmup", -1, "")
	wait := fs.String("wait", "", "")
	reliable := fs.Bool("reliable", false, "")
	pin := fs.Bool("pin", false, "")
	pingCPU := fs.Int("ping-cpu", -1, "")
	pongCPU := fs.Int("pong-cpu", -1, "")
	if err := fs.Parse(args[1:]); err != nil {
		// Not a flag set this function knows: a hilrig transport with
		// its own flags, or a mistake bench.Main reports itself —
		// unless a peer was named.
		if t := transportArg(args[1:]); t != "" && isPeerList(t) {
			return nil, nil, true, fmt.Errorf("%w: %v (with a peer transport: --transport, --size, -n, --warmup, --wait, --reliable, --pin, --ping-cpu, --pong-cpu)", errPeerBench, err)
		}
		return nil, nil, false, nil
	}
	if !isPeerList(*transport) {
		return nil, nil, false, nil
	}
	for _, p := range strings.Split(*transport, ",") {
		if t := peerTransports[p]; !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	peerArgs = []string{"bench", "pingpong", "--transport", *transport}
	if len(sizes) > 0 {
		var bs []string
		for _, s := range sizes {
			v, err := bench.ParseSizes(s)
			if err != nil {
				return nil, nil, true, fmt.Errorf("%w: --size %q: %w", errPeerBench, s, err)
			}
			for _, b := range v {
				bs = append(bs, strconv.Itoa(b))
			}
		}
		peerArgs = append(peerArgs, "--sizes", strings.Join(bs, ","))
	}
	if *n > 0 {
		peerArgs = append(peerArgs, "--count", strconv.Itoa(*n))
	}
	if *warm >= 0 {
		peerArgs = append(peerArgs, "--warmup", strconv.Itoa(*warm))
	}
	if *wait != "" {
		peerArgs = append(peerArgs, "--wait", *wait)
	}
	if *reliable {
		peerArgs = append(peerArgs, "--reliable")
	}
	cpus := "" // unpinned, as hilrig's pingpong without --pin
	if *pin || *pingCPU >= 0 || *pongCPU >= 0 {
		a, b := max(*pingCPU, 0), *pongCPU
		if b < 0 {
			b = 1
		}
		cpus = fmt.Sprintf("%d,%d", a, b)
	}
	peerArgs = append(peerArgs, "--cpus", cpus)
	return peerArgs, tags, true, nil
}

// transportArg finds --transport's value in args without parsing them.
func transportArg(args []string) string {
	for i, a := range args {
		for _, p := range []string{"--transport=", "-transport="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v
			}
		}
		if (a == "--transport" || a == "-transport") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// isPeerList: every name in the comma list is a peer transport.
func isPeerList(t string) bool {
	if t == "" {
		return false
	}
	for _, p := range strings.Split(t, ",") {
		if _, ok := peerTransports[p]; !ok {
			return false
		}
	}
	return true
}

// runPeerBench runs the peer bench in the peer agent binary.
func runPeerBench(ctx context.Context, peerArgs, tags []string, stdout, stderr io.Writer) error {
	return runPeerBin(ctx, errPeerBench, peerArgs, tags, stdout, stderr)
}

// runPeerBin runs a command of the peer agent binary (cmd/hilrig-peer):
// $HILRIG_PEER_BIN if set, else built from this module's source for
// tags (deploy's build cache; needs the Debian -dev packages the peers
// link). Its output is passed through; errors wrap errKind. Blocks until
// it ends or ctx does.
func runPeerBin(ctx context.Context, errKind error, peerArgs, tags []string, stdout, stderr io.Writer) error {
	bin := os.Getenv("HILRIG_PEER_BIN")
	if bin == "" {
		var err error
		if bin, err = deploy.Build(ctx, deploy.BuildOptions{Peers: tags}); err != nil {
			return fmt.Errorf("%w: the peer agent binary (cgo, tags %v) is needed; set HILRIG_PEER_BIN to one, or run from the module's source: %w", errKind, tags, err)
		}
	}
	fmt.Fprintf(stderr, "# runs in %s %s\n", bin, strings.Join(peerArgs, " "))
	cmd := exec.CommandContext(ctx, bin, peerArgs...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s: %w", errKind, bin, err)
	}
	return nil
}
