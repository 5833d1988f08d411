package rig

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware"
)

// MiddlewareHilrig is hilrig's own middleware's name.
const MiddlewareHilrig = agentproto.MiddlewareHilrig

// PeerInstalled reports whether the peer agent can be built with the
// peer build tag (cyclonedds, fastdds, iceoryx) on this machine: nil, or
// an error naming what is missing (compilers, libraries and their Debian
// packages; iceoryx also needs iox-roudi).
func PeerInstalled(tag string) error {
	if err := deploy.CheckPeers(runtime.GOOS, runtime.GOARCH, []string{tag}); err != nil {
		return err
	}
	if tag == "iceoryx" {
		if _, err := exec.LookPath("iox-roudi"); err != nil {
			return fmt.Errorf("iox-roudi (Debian iceoryx) not found: %w", err)
		}
	}
	return nil
}

// BuildAgents builds the agents' binary for this machine: hilrig, or the
// peer agent (cmd/hilrig-peer, cgo) with the peer build tags.
func BuildAgents(ctx context.Context, peerTags []string) (string, error) {
	if len(peerTags) == 0 {
		return Build(ctx)
	}
	bin, err := deploy.Build(ctx, deploy.BuildOptions{Peers: peerTags})
	if err != nil {
		return "", fmt.Errorf("rig: build the peer agent (%v): %w", peerTags, err)
	}
	return bin, nil
}

// ErrPeerRoute: a peer middleware cannot run between these boards over
// this transport on this rack (peers are confined to loopback or a
// link's own veth addresses); the error says why.
var ErrPeerRoute = errors.New("rig: peer middleware cannot take this route")

// sameNetwork reports whether boards a and b share a network namespace
// on the controller's host (so loopback reaches from one to the other).
func (r *Rig) sameNetwork(a, b string) bool {
	ba, err1 := r.Rack.Board(a)
	bb, err2 := r.Rack.Board(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ra, rb := ba.Reach, bb.Reach
	switch {
	case ra.Kind == fixtures.ReachLocal && rb.Kind == fixtures.ReachLocal:
		return true
	case ra.Kind == fixtures.ReachNetns && rb.Kind == fixtures.ReachNetns:
		return ra.Netns == rb.Netns
	}
	return false
}

// peerNets returns each board's peer network for traffic t of a peer
// middleware between from and the to boards: loopback (nil) when they
// share a network namespace, the link's veth addresses for a UDP link
// between namespaces, iceoryx anywhere that shares /dev/shm (a shm link);
// otherwise ErrPeerRoute. The map is keyed by board.
func (r *Rig) peerNets(t Traffic, from string, to []string) (map[string]*agentproto.PeerNet, error) {
	nets := map[string]*agentproto.PeerNet{}
	if !agentproto.IsPeer(t.Middleware) {
		return nets, nil
	}
	iceoryx := t.Middleware == "iceoryx"
	for _, b := range to {
		switch {
		case b == from || r.sameNetwork(from, b):
		case iceoryx && t.Transport == fixtures.Shm:
		case t.Middleware == "fastdds-shm" && t.Transport == fixtures.Shm:
			// Measured on the sim rack: SHM-only participants in two
			// namespaces never match — Fast DDS 2.9 derives the host id in
			// its SHM locators from the network interfaces, so boards in
			// different namespaces are different hosts to it.
			return nil, fmt.Errorf("%w: fastdds-shm between %s and %s: Fast DDS takes boards in different network namespaces for different hosts (its SHM locators carry a host id derived from the interfaces), so its SHM transport never matches across them", ErrPeerRoute, from, b)
		case iceoryx:
			return nil, fmt.Errorf("%w: iceoryx is shared memory only; %s → %s is a %s route", ErrPeerRoute, from, b, t.Transport)
		case t.Transport == fixtures.UDP && t.Link != "":
			fa, err := r.boardAddr(t.Link, from)
			if err != nil {
				return nil, err
			}
			ta, err := r.boardAddr(t.Link, b)
			if err != nil {
				return nil, err
			}
			nets[from] = &agentproto.PeerNet{Address: fa.String(), Peers: appendAddr(nets[from], ta.String())}
			nets[b] = &agentproto.PeerNet{Address: ta.String(), Peers: []string{fa.String()}}
		default:
			return nil, fmt.Errorf("%w: %s confined to loopback, and %s and %s share no network namespace (a %s link without addresses)", ErrPeerRoute, t.Middleware, from, b, t.Transport)
		}
	}
	return nets, nil
}

func appendAddr(n *agentproto.PeerNet, a string) []string {
	if n == nil {
		return []string{a}
	}
	return append(n.Peers, a)
}

// ErrPeerBroken: the run claims a peer middleware that does not work.
var ErrPeerBroken = errors.New("rig: peer middleware not working")

// CheckPeers is the health gate's peer check: every named peer opens on
// the rack's first board (a subscriber started through the agent, then
// stopped), so a peer whose libraries load but whose participant or
// RouDi cannot start fails the gate instead of every spec. Blocks.
func (r *Rig) CheckPeers(ctx context.Context, names []string) error {
	if len(r.Rack.Boards) == 0 {
		return nil
	}
	board := r.Rack.Boards[0].Name
	var errs []error
	for _, mw := range names {
		if !agentproto.IsPeer(mw) {
			continue
		}
		a, err := r.Agent(ctx, board)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ep, err := a.Start(cctx, agentproto.Start{Endpoint: "health-" + mw, Role: agentproto.Subscriber, Middleware: mw, Domain: r.Domain,
			Contract: middleware.Contract{Topic: "hilrig/health/" + mw, MaxPayload: 64}})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: board %s, peer %s: %w", ErrPeerBroken, board, mw, err))
			continue
		}
		_ = ep.Stop()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, _ = ep.Wait(wctx)
		cancel()
	}
	return errors.Join(errs...)
}
