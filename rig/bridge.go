package rig

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/procstat"
	"github.com/hilrig/hilrig/internal/tailbuf"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
)

// BridgeSpec puts `hilrig bridge` (ros2/bridge) between a flow's
// publisher and its one subscriber (FlowSpec.Bridge): the flow's
// Traffic.ROS2 topic crosses hilrig's bus (the flow's link and transport)
// and the ROS 2 graph of Traffic.Middleware (a DDS peer), and the bridge
// runs as its own process on a board, started by the board's deployer,
// so its CPU is its own (/proc/PID/stat).
//
//   - to_ros: the publisher is on hilrig's bus on the From board; the
//     bridge and the ROS 2 subscriber run on the To board, their DDS on
//     that board's loopback (a ROS 2 node beside the bridge);
//   - from_ros: the ROS 2 publisher and the bridge run on the From board,
//     DDS on its loopback; the subscriber is on hilrig's bus on To.
//
// Both ends time messages from the ROS 2 header stamp the publisher wrote
// right before its send to the subscriber's receive stamp, as every ROS 2
// case does, so the bridge's forward and the extra hop are inside the
// latency.
type BridgeSpec struct {
	Direction bridgeconf.Direction
}

// BridgeUsage is what a flow's bridge process used while the flow ran.
type BridgeUsage struct {
	// Board is where it ran; Where its process ("netns hlr… pid 123").
	Board, Where string
	// CPU is the process's user + system CPU time from the publisher's
	// start (after its discovery wait) to its final, the span the bridge
	// forwards traffic (/proc/PID/stat, USER_HZ ticks: 10 ms resolution);
	// Wall the time between the reads.
	CPU, Wall time.Duration
	// Health is the bridge's own account after the subscriber's final
	// (its --health-format json record): forwarded, dropped, and the
	// latency it added from its source's receive stamp to its forward's
	// return. Nil when it wrote none.
	Health *bridgeconf.HealthRecord
}

// Percent is CPU over Wall, per cent of one CPU (0 without a wall time).
func (u BridgeUsage) Percent() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return 100 * u.CPU.Seconds() / u.Wall.Seconds()
}

// bridgeProc is a running bridge process.
type bridgeProc struct {
	board string
	proc  *deploy.Process
	dir   string          // its configuration and ready file
	out   *tailbuf.Buffer // stdout lines that are not health records
	// health is the last health record read from stdout, healthN how
	// many were read (mu guards both).
	mu      sync.Mutex
	health  bridgeconf.HealthRecord
	healthN uint64
	// cpu0 and t0 are the first reading (mark).
	cpu0 time.Duration
	t0   time.Time
}

// bridgeReady bounds the bridge's start: exec, its DDS participant, and
// its wait for its DDS ends to match (--match-wait).
const bridgeReady = 30 * time.Second

// startBridge starts `<agent binary> bridge` on board with one topic,
// hilrig's side h, and waits until it wrote its ready file. The agents'
// binary is the peer agent when the rig runs peers (its bridge command is
// the bridge itself); hilrig's own execs hilrig-peer. Local and netns
// boards only: the CPU is read from this machine's /proc.
func (r *Rig) startBridge(ctx context.Context, board string, spec FlowSpec, h bridgeconf.Hilrig) (*bridgeProc, error) {
	b, err := r.Rack.Board(board)
	if err != nil {
		return nil, err
	}
	if k := b.Reach.Kind; k != fixtures.ReachLocal && k != fixtures.ReachNetns {
		return nil, fmt.Errorf("%w: the bridge runs on local and netns boards (its CPU is read from this machine's /proc); %s is reached by %v", ErrPeerRoute, board, k)
	}
	bin, err := r.localBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hilrig-bridge-")
	if err != nil {
		return nil, fmt.Errorf("rig: bridge: %w", err)
	}
	cfg := bridgeconf.Config{Domain: r.Domain, Topics: []bridgeconf.Topic{{ROS: *spec.ROS2, Hilrig: h, Direction: spec.Bridge.Direction}}}
	file, ready := filepath.Join(dir, "bridge.json"), filepath.Join(dir, "ready")
	if err := cfg.WriteFile(file); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// from_ros: the ROS 2 publisher starts after the bridge, and its
	// writer waits for the bridge's reader, so the bridge need not wait.
	wait := "10s"
	if spec.Bridge.Direction == bridgeconf.FromROS {
		wait = "0s"
	}
	args := []string{"bridge", "--config", file, "--dds", spec.Middleware, "--ready", ready, "--match-wait", wait, "--health", bridgeHealth.String(), "--health-format", "json"}
	var proc *deploy.Process
	if b.Reach.Kind == fixtures.ReachLocal {
		proc, err = deploy.StartLocal(ctx, bin, args...)
	} else {
		name := b.Reach.Netns
		if ns, ok := r.NetnsName(b.Reach.Netns); ok {
			name = ns
		}
		proc, err = deploy.StartNetns(ctx, name, bin, args...)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("rig: bridge on %s: %w", board, err)
	}
	p := &bridgeProc{board: board, proc: proc, dir: dir, out: tailbuf.New(16 << 10)}
	go p.read(proc.Stdout)
	r.mu.Lock()
	r.closers = append(r.closers, p.stop)
	r.mu.Unlock()
	if err := p.awaitReady(ctx, ready); err != nil {
		_ = p.stop()
		return nil, fmt.Errorf("rig: bridge on %s: %w", board, err)
	}
	return p, nil
}

// bridgeHealth is the bridge's health period: how stale its last record
// may be.
const bridgeHealth = 100 * time.Millisecond

// read decodes the bridge's stdout, one health record a line, until it
// closes; a line that is not one is kept for diagnostics.
func (p *bridgeProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var h bridgeconf.HealthRecord
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			fmt.Fprintf(p.out, "%s\n", sc.Bytes())
			continue
		}
		p.mu.Lock()
		p.health, p.healthN = h, p.healthN+1
		p.mu.Unlock()
	}
}

// freshHealth waits for a health record written after the call (the
// bridge writes one every bridgeHealth) and returns it; nil when none
// came in wait, the process exited or ctx ended.
func (p *bridgeProc) freshHealth(ctx context.Context, wait time.Duration) *bridgeconf.HealthRecord {
	p.mu.Lock()
	n0 := p.healthN
	p.mu.Unlock()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		h, n := p.health, p.healthN
		p.mu.Unlock()
		if n > n0 {
			return &h
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.proc.Done():
			return nil
		case <-deadline.C:
			return nil
		case <-t.C:
		}
	}
}

// awaitReady polls for the ready file until it exists, the process exits
// (its stderr in the error), bridgeReady passes or ctx ends.
func (p *bridgeProc) awaitReady(ctx context.Context, ready string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.NewTimer(bridgeReady)
	defer deadline.Stop()
	for {
		if _, err := os.Stat(ready); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.proc.Done():
			return fmt.Errorf("%s exited before it was ready: %s", p.proc.Where, p.proc.Stderr())
		case <-deadline.C:
			return fmt.Errorf("%s not ready in %v: %s %s", p.proc.Where, bridgeReady, p.out.String(), p.proc.Stderr())
		case <-t.C:
		}
	}
}

// mark takes the first CPU reading.
func (p *bridgeProc) mark() error {
	cpu, _, err := procstat.Usage(p.proc.PID)
	if err != nil {
		return fmt.Errorf("rig: bridge %s: %w", p.proc.Where, err)
	}
	p.cpu0, p.t0 = cpu, time.Now()
	return nil
}

// usage takes the second reading: what the process used since mark.
func (p *bridgeProc) usage() (BridgeUsage, error) {
	cpu, _, err := procstat.Usage(p.proc.PID)
	if err != nil {
		return BridgeUsage{}, fmt.Errorf("rig: bridge %s: %w (stderr: %s)", p.proc.Where, err, p.proc.Stderr())
	}
	return BridgeUsage{Board: p.board, Where: p.proc.Where, CPU: cpu - p.cpu0, Wall: time.Since(p.t0)}, nil
}

// bridgeStop bounds the bridge's own shutdown after SIGTERM.
const bridgeStop = 3 * time.Second

// stop asks the bridge to end (SIGTERM: it closes its DDS participant,
// which tells the other participants it left — a killed one stays in
// their discovery until its lease expires, and Fast DDS then lost most
// 1 MiB samples of the next bridge's topic on the same board), kills it
// after bridgeStop, and removes its files. Idempotent.
func (p *bridgeProc) stop() error {
	select {
	case <-p.proc.Done():
	default:
		if pr, err := os.FindProcess(p.proc.PID); err == nil && pr.Signal(syscall.SIGTERM) == nil {
			t := time.NewTimer(bridgeStop)
			select {
			case <-p.proc.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	err := p.proc.Kill()
	return errors.Join(err, os.RemoveAll(p.dir))
}

// bridgeHilrig is hilrig's side of the flow's bridge: the flow's contract
// c, listening at listen when the bridge is a UDP subscriber (to_ros).
func bridgeHilrig(spec FlowSpec, c middleware.Contract, listen netip.AddrPort) bridgeconf.Hilrig {
	h := bridgeconf.Hilrig{Topic: c.Topic, MaxPayload: c.MaxPayload, Reliable: c.Reliability == middleware.Reliable, Depth: c.Depth}
	if c.Transport == middleware.TransportUDP {
		h.Transport = bridgeconf.UDP
		h.UDP = c.UDP
		if spec.Bridge.Direction == bridgeconf.ToROS {
			h.UDP.Peers = nil
			h.UDP.Listen = listen.String()
		}
	}
	return h
}

// checkBridge checks a bridged flow's spec: a ROS 2 topic on a DDS peer,
// one subscriber, hilrig's side between boards (not intra).
func checkBridge(spec FlowSpec) error {
	switch {
	case spec.ROS2 == nil:
		return errors.New("a bridged flow needs a ROS 2 topic (Traffic.ROS2)")
	case spec.Middleware == "" || spec.Middleware == MiddlewareHilrig:
		return errors.New("a bridged flow needs the ROS 2 side's DDS peer (Traffic.Middleware)")
	case len(spec.To) != 1:
		return fmt.Errorf("a bridged flow has one subscriber, not %d", len(spec.To))
	case spec.Transport == fixtures.Intra:
		return errors.New("a bridged flow's hilrig side runs between processes (shm or udp), not intra")
	case spec.Bridge.Direction > bridgeconf.FromROS:
		return fmt.Errorf("bridge direction %d", spec.Bridge.Direction)
	}
	return nil
}
