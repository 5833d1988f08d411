// Package netns makes throw-away Linux network namespaces joined by veth
// pairs, so tests and the sim rack can run "boards" on separate network
// stacks of one machine. Everything it creates carries a "hlr" prefix and is
// removed by Close; what a killed process left is removed by the next
// process's first New (see ownerDir). It never touches the default
// namespace's interfaces.
//
// It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's ip(8).
package netns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/linkstate"
)

// ErrUnavailable is returned by Available and New when namespaces cannot be
// made here (not root, no ip binary).
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// Available reports whether this process can create network namespaces. The
// error names the missing capability or tool.
func Available() error {
	if err := osAvailable(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN); run the tests as root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: iproute2 'ip' not found in PATH (apt-get install iproute2)", ErrUnavailable)
	}
	return nil
}

// runDir is where ip(8) keeps the named namespaces (bind mounts).
const runDir = "/var/run/netns"

var seq atomic.Uint32

// uniqueName returns a short, host-unique name: ip(8) limits interface names
// to 15 bytes, so names are "hlr<pid%100000><n>" plus a short role suffix.
func uniqueName(role string) string {
	return fmt.Sprintf("hlr%d%s%d", os.Getpid()%100000, role, seq.Add(1))
}

// NS is one network namespace made by New. Safe for concurrent use.
type NS struct {
	// Name is the namespace name under /var/run/netns.
	Name string

	closeOnce sync.Once
	closeErr  error
}

// New creates a namespace with a unique name beginning with "hlr" and brings
// its loopback up. The caller must Close it. ctx bounds the ip(8) calls.
func New(ctx context.Context) (*NS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	// Housekeeping, once per process: a failure to reap another run's
	// leftovers is no reason to fail this one.
	reapOnce.Do(func() { _, _ = reapStale(ctx) })
	ns := &NS{Name: uniqueName("n")}
	if err := writeOwner(ns.Name); err != nil {
		return nil, err
	}
	if err := ip(ctx, "netns", "add", ns.Name); err != nil {
		_ = removeOwner(ns.Name)
		return nil, err
	}
	if err := ip(ctx, "-n", ns.Name, "link", "set", "lo", "up"); err != nil {
		_ = ns.Close()
		return nil, err
	}
	return ns, nil
}

// Close deletes the namespace (and with it every interface inside).
// Idempotent.
func (n *NS) Close() error {
	n.closeOnce.Do(func() {
		n.closeErr = ip(context.Background(), "netns", "delete", n.Name)
		if n.closeErr == nil {
			n.closeErr = removeOwner(n.Name)
		}
	})
	return n.closeErr
}

// Command returns a command that runs inside the namespace (ip netns exec).
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Do runs fn on a dedicated OS thread that has entered the namespace. Sockets
// fn creates stay in the namespace for their whole life, so fn may return
// them to the caller. The thread is never returned to the Go scheduler (it
// exits with the goroutine), so no other goroutine ever runs in the
// namespace by accident. Blocks until fn returns.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is tainted and must die with us.
		f, err := os.Open(filepath.Join(runDir, n.Name))
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", n.Name, err)
			return
		}
		err = setns(f)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("netns %s: setns: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Pair is two namespaces joined by one veth pair with a /30 between them.
type Pair struct {
	A, B           *NS
	AIface, BIface string     // interface names inside A and B
	AAddr, BAddr   netip.Addr // addresses of A's and B's ends
}

// PairOptions tunes NewPair. nil means defaults.
type PairOptions struct {
	// MTU of the veth pair; 0 keeps the kernel default (1500).
	MTU int
	// AMAC/BMAC set fixed MAC addresses (fixed PTP clock identities).
	AMAC, BMAC string
}

// NewPair creates two namespaces joined by a veth pair, addresses from
// 10.233.0.0/16 (only ever inside the namespaces), links up and running
// (it waits for the kernel to mark both ends running, up to 10 s). Close
// removes everything.
func NewPair(ctx context.Context, opts *PairOptions) (*Pair, error) {
	if opts == nil {
		opts = &PairOptions{}
	}
	a, err := New(ctx)
	if err != nil {
		return nil, err
	}
	b, err := New(ctx)
	if err != nil {
		_ = a.Close()
		return nil, err
	}
	p := &Pair{A: a, B: b, AIface: uniqueName("a"), BIface: uniqueName("b")}
	// A /30 per pair: host part 1 and 2; the third octet from a counter keeps
	// pairs of one process apart, the pid keeps processes apart.
	n := seq.Add(1)
	third := byte((uint32(os.Getpid())*7 + n) % 256)
	fourth := byte((n % 64) * 4)
	p.AAddr = netip.AddrFrom4([4]byte{10, 233, third, fourth + 1})
	p.BAddr = netip.AddrFrom4([4]byte{10, 233, third, fourth + 2})
	steps := [][]string{
		{"link", "add", p.AIface, "netns", a.Name, "type", "veth", "peer", "name", p.BIface, "netns", b.Name},
	}
	if opts.AMAC != "" {
		steps = append(steps, []string{"-n", a.Name, "link", "set", p.AIface, "address", opts.AMAC})
	}
	if opts.BMAC != "" {
		steps = append(steps, []string{"-n", b.Name, "link", "set", p.BIface, "address", opts.BMAC})
	}
	if opts.MTU > 0 {
		mtu := fmt.Sprint(opts.MTU)
		steps = append(steps,
			[]string{"-n", a.Name, "link", "set", p.AIface, "mtu", mtu},
			[]string{"-n", b.Name, "link", "set", p.BIface, "mtu", mtu})
	}
	steps = append(steps,
		[]string{"-n", a.Name, "addr", "add", p.AAddr.String() + "/30", "dev", p.AIface},
		[]string{"-n", b.Name, "addr", "add", p.BAddr.String() + "/30", "dev", p.BIface},
		[]string{"-n", a.Name, "link", "set", p.AIface, "up"},
		[]string{"-n", b.Name, "link", "set", p.BIface, "up"},
		// Multicast to the veth (tests bind groups to it, never the default interface).
		[]string{"-n", a.Name, "route", "add", "224.0.0.0/4", "dev", p.AIface},
		[]string{"-n", b.Name, "route", "add", "224.0.0.0/4", "dev", p.BIface},
	)
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			_ = p.Close()
			return nil, err
		}
	}
	if err := p.awaitRunning(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// linkWait bounds how long a veth end brought up may take to run.
const linkWait = 10 * time.Second

// awaitRunning returns when both veth ends are up and running: `ip link
// set up` returns before the kernel marks a link running, and programs
// that skip interfaces not running (Fast DDS) would start without it.
func (p *Pair) awaitRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, linkWait)
	defer cancel()
	for _, end := range []struct {
		ns    *NS
		iface string
	}{{p.A, p.AIface}, {p.B, p.BIface}} {
		if err := end.ns.Do(func() error {
			_, err := linkstate.AwaitName(ctx, end.iface)
			return err
		}); err != nil {
			return fmt.Errorf("netns %s: %w", end.ns.Name, err)
		}
	}
	return nil
}

// SetLink brings the veth link up or down on both ends (link-loss faults).
// Up returns once both ends run (carry traffic), or an error after 10 s.
func (p *Pair) SetLink(ctx context.Context, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := ip(ctx, "-n", p.A.Name, "link", "set", p.AIface, state); err != nil {
		return err
	}
	if err := ip(ctx, "-n", p.B.Name, "link", "set", p.BIface, state); err != nil {
		return err
	}
	if !up {
		return nil
	}
	return p.awaitRunning(ctx)
}

// Close deletes both namespaces (the veth goes with them). Idempotent.
func (p *Pair) Close() error {
	return errors.Join(p.A.Close(), p.B.Close())
}

// List returns the names of namespaces with the "hlr" prefix (leak checks).
func List() ([]string, error) {
	ents, err := os.ReadDir(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: list: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "hlr") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ListOwn returns the namespaces List finds that this process created
// (their names carry its pid, see uniqueName): the leak check for a test,
// which must not count namespaces other test binaries running at the same
// time make and remove. Does not block beyond one directory read.
func ListOwn() ([]string, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("hlr%d", os.Getpid()%100000)
	var out []string
	for _, n := range all {
		// "hlr12" must not claim "hlr1234n1": a role letter follows the pid.
		if rest, ok := strings.CutPrefix(n, prefix); ok && rest != "" && (rest[0] < '0' || rest[0] > '9') {
			out = append(out, n)
		}
	}
	return out, nil
}

func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
