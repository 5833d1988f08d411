// Package linkstate waits until a network interface can carry traffic:
// administratively up and running (IFF_RUNNING: carrier on, operstate up).
//
// Bringing a veth up is not enough. The kernel sets IFF_RUNNING only when
// the other end is up too, and then from its link-watch work queue, which
// may run many milliseconds after `ip link set … up` returned (CI saw it
// late on a loaded 2-core machine). Programs that list interfaces through
// getifaddrs and skip the ones not running — Fast DDS does, and then
// starts with "All whitelist interfaces were filtered out" and no network
// at all — must not be started before that.
//
// Everything here reads the network namespace of the calling OS thread
// (net.Interfaces opens its netlink socket there), so a caller inside
// netns.NS.Do sees that namespace.
package linkstate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// ErrNotRunning is wrapped by the errors of AwaitAddr and AwaitName when
// ctx ends before the interface runs.
var ErrNotRunning = errors.New("network interface not running")

// poll is how often the interface list is read while waiting. Link-watch
// has no event a process can wait on without a netlink subscription of
// its own; a few ms between reads costs nothing against a start-up that
// takes tens of ms.
const poll = 5 * time.Millisecond

// Running reports whether flags say up and running.
func Running(f net.Flags) bool {
	return f&net.FlagUp != 0 && f&net.FlagRunning != 0
}

// AwaitAddr blocks until addr is assigned to an interface of the calling
// thread's namespace that is up and running, and returns that interface.
// It honours ctx: when ctx ends first the error wraps ErrNotRunning and
// says what was last seen (addr on no interface, or on which interface
// with which flags). Safe for concurrent use.
func AwaitAddr(ctx context.Context, addr netip.Addr) (net.Interface, error) {
	addr = addr.Unmap()
	return await(ctx, func() (net.Interface, bool, string, error) {
		ifs, err := net.Interfaces()
		if err != nil {
			return net.Interface{}, false, "", fmt.Errorf("linkstate: list interfaces: %w", err)
		}
		var have []string
		for _, ifc := range ifs {
			as, err := ifc.Addrs()
			if err != nil {
				return net.Interface{}, false, "", fmt.Errorf("linkstate: addresses of %s: %w", ifc.Name, err)
			}
			for _, a := range as {
				p, ok := prefixOf(a)
				if !ok {
					continue
				}
				if p.Addr().Unmap() == addr {
					return ifc, Running(ifc.Flags), fmt.Sprintf("%s is on %s, which is %s", addr, ifc.Name, describe(ifc.Flags)), nil
				}
				if p.Addr().Is4() {
					have = append(have, ifc.Name+" "+p.Addr().String())
				}
			}
		}
		return net.Interface{}, false, fmt.Sprintf("%s is on no interface here (IPv4 addresses: %s)", addr, strings.Join(have, ", ")), nil
	})
}

// AwaitName blocks until the interface called name is up and running in
// the calling thread's namespace. ctx as for AwaitAddr.
func AwaitName(ctx context.Context, name string) (net.Interface, error) {
	return await(ctx, func() (net.Interface, bool, string, error) {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			return net.Interface{}, false, fmt.Sprintf("no interface %s here (%v)", name, err), nil
		}
		return *ifc, Running(ifc.Flags), fmt.Sprintf("%s is %s", name, describe(ifc.Flags)), nil
	})
}

// await polls check until it reports running, fails, or ctx ends.
func await(ctx context.Context, check func() (net.Interface, bool, string, error)) (net.Interface, error) {
	begin := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		ifc, ok, state, err := check()
		if err != nil {
			return net.Interface{}, err
		}
		if ok {
			return ifc, nil
		}
		t.Reset(poll)
		select {
		case <-t.C:
		case <-ctx.Done():
			return net.Interface{}, fmt.Errorf("linkstate: %w after %v: %s (%v)", ErrNotRunning, time.Since(begin).Round(time.Millisecond), state, context.Cause(ctx))
		}
	}
}

// describe says what flags mean for carrying traffic.
func describe(f net.Flags) string {
	switch {
	case f&net.FlagUp == 0:
		return "down (administratively: nobody ran `ip link set … up`)"
	case f&net.FlagRunning == 0:
		return "up but not running (no carrier: the other end of the link is down, or the kernel has not marked it running yet)"
	}
	return "up and running"
}

func prefixOf(a net.Addr) (netip.Prefix, bool) {
	n, ok := a.(*net.IPNet)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}
