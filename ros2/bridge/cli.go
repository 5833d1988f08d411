package bridge

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// ErrUsage wraps command-line mistakes of Main.
var ErrUsage = errors.New("usage")

// Main is `hilrig-peer bridge` (which `hilrig bridge` execs):
//
//	bridge --config FILE [--dds cyclonedds|fastdds-udp|fastdds-shm] [--health 1s] [--match-wait 10s] [--ready FILE] [--health-format text|json]
//
// It opens the DDS peer named by --dds from peers (the peer binary's
// adapters; its DDS domain from HILRIG_DDS_DOMAIN, confined to loopback
// as every peer), a hilrig node in the configuration's domain and shm
// directory, waits until every topic's DDS end matched or --match-wait
// passed, and forwards until ctx ends, writing each topic's health line
// to stdout every --health. Blocks.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, peers map[string]agent.PeerOpener) error {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "bridge configuration (JSON): topics with ros {name,type,profile}, hilrig contract, direction")
	dds := fs.String("dds", "cyclonedds", "the DDS side: cyclonedds, fastdds-udp or fastdds-shm")
	health := fs.Duration("health", time.Second, "health line period")
	matchWait := fs.Duration("match-wait", 10*time.Second, "how long to wait for every DDS end to match before forwarding anyway")
	format := fs.String("health-format", "text", "health lines: text (for a person) or json (one bridgeconf.HealthRecord a line, for a controller)")
	ready := fs.String("ready", "", "a file to create (empty) once every topic's ends are open and matched (or --match-wait passed): the controller that started the bridge waits for it")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if *config == "" || *health <= 0 {
		return fmt.Errorf("%w: --config is required, --health positive", ErrUsage)
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("%w: --health-format %q: want text or json", ErrUsage, *format)
	}
	cfg, err := LoadConfig(*config)
	if err != nil {
		return err
	}
	open, ok := peers[*dds]
	if !ok {
		return fmt.Errorf("%w: --dds %s: this binary has no such peer", ErrUsage, *dds)
	}
	p, err := open("bridge", agentproto.PeerNet{})
	if err != nil {
		return fmt.Errorf("bridge: %s: %w", *dds, err)
	}
	defer p.Close()
	rp, ok := p.(agent.PeerROS2)
	if !ok {
		return fmt.Errorf("bridge: %s does not speak ROS 2", *dds)
	}
	node, err := middleware.OpenNode("hilrig-bridge", &middleware.NodeOptions{Domain: cfg.Domain, ShmDir: cfg.ShmDir})
	if err != nil {
		return fmt.Errorf("bridge: hilrig node: %w", err)
	}
	defer node.Close()
	b, err := New(node, rp, cfg.Topics)
	if err != nil {
		return err
	}
	defer b.Close()
	b.HealthJSON = *format == "json"
	banner := stdout
	if b.HealthJSON {
		banner = stderr // stdout carries only the JSON records
	}
	fmt.Fprintf(banner, "bridge: %d topics, DDS %s\n", len(cfg.Topics), p.Describe())
	if err := awaitMatched(ctx, b, *matchWait); err != nil {
		return err
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, nil, 0o644); err != nil {
			return fmt.Errorf("bridge: --ready: %w", err)
		}
	}
	return b.Run(ctx, stdout, *health)
}

// awaitMatched polls b until every DDS end matched, wait passed (then it
// forwards anyway: a topic whose other side comes later still works) or
// ctx ends.
func awaitMatched(ctx context.Context, b *Bridge, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for time.Now().Before(deadline) {
		n, err := b.Matched()
		if err != nil {
			return err
		}
		if n == len(b.topics) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}
