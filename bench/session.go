package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/bench/internal/sys"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/netns"
)

// Transport names accepted by pingpong.
const (
	TShm          = "shm"            // middleware shared memory between two processes
	TIntra        = "intra"          // middleware intra-process, two goroutines
	TUDP          = "udp"            // middleware UDP between two processes
	TRawSpin      = "raw-spin"       // baseline: two processes spinning on a shared cache line
	TRawFutex     = "raw-futex"      // baseline: same with futex sleep/wake
	TUDS          = "uds"            // baseline: Unix stream socket pair
	TRawUDP       = "raw-udp"        // baseline: plain blocking UDP sockets
	TRawSpinIntra = "raw-spin-intra" // baseline: two goroutines spinning in one process
	TChan         = "chan"           // baseline: two goroutines over Go channels
)

// Transports lists every pingpong transport, middleware first.
var Transports = []string{TShm, TIntra, TUDP, TRawSpin, TRawFutex, TUDS, TRawUDP, TRawSpinIntra, TChan}

func isMiddleware(t string) bool { return t == TShm || t == TIntra || t == TUDP }

func inProcess(t string) bool { return t == TIntra || t == TRawSpinIntra || t == TChan }

// pinger is the timed end. roundTrip is 0 allocs.
type pinger interface {
	handshake(ctx context.Context) error
	roundTrip(seq uint64) error
	close() error
}

// ponger is the echoing end; serve returns the number of messages answered
// once ctx is done or stop is set.
type ponger interface {
	serve(ctx context.Context, stop *atomic.Bool) (uint64, error)
	close() error
}

// endSpec is what one session needs (shared by pingpong and throughput).
type endSpec struct {
	transport string
	wait      kind.Wait // middleware ends only
	path      string    // copy|loan (middleware)
	size      int
	reliable  bool
	netns     bool
	dgram     int
	pingCPU   int
	pongCPU   int
	launcher  Launcher
	depth     int    // contract history depth; 0: 1
	keepLast  bool   // udp reliable: keep-last history (UDPConfig.KeepLast)
	dedicated bool   // udp: dedicated reader threads (UDPConfig.DedicatedReader)
	rawGSO    bool   // raw-udp: runs of datagrams per call (UDP GSO) and UDP_GRO reads
	keyFile   string // udp: domain key file; "": unauthenticated
}

// session is one set-up ping-pong: the local pinger and either a child
// process or an in-process pong goroutine. close tears everything down on
// every path: stops the pong, kills and reaps the child, removes the shm
// directory and the namespaces.
type session struct {
	ping     pinger
	outer    context.Context // the caller's: cancelling it kills the child
	ctx      context.Context // the run's: cancelled to stop the loops
	cancel   context.CancelFunc
	stop     atomic.Bool
	peer     *peer
	pongDone chan pongResult
	cleanups []func() error
	nsA      *netns.NS
}

type pongResult struct {
	n   uint64
	err error
}

func (s *session) onStop() {
	s.stop.Store(true)
	s.cancel()
}

func (s *session) addCleanup(f func() error) { s.cleanups = append(s.cleanups, f) }

// inA runs fn inside the parent's namespace when the session has one.
func (s *session) inA(fn func() error) error {
	if s.nsA == nil {
		return fn()
	}
	return s.nsA.Do(fn)
}

// close stops and reaps everything; the error reports a pong failure.
func (s *session) close() error {
	s.onStop()
	var errs []error
	if s.peer != nil {
		_, err := s.peer.finish(5 * time.Second)
		s.peer.kill()
		if err != nil && !errors.Is(err, ErrStalled) {
			errs = append(errs, err)
		}
	}
	if s.pongDone != nil {
		select {
		case r := <-s.pongDone:
			if r.err != nil {
				errs = append(errs, fmt.Errorf("pong: %w", r.err))
			}
		case <-time.After(5 * time.Second):
			errs = append(errs, fmt.Errorf("%w: in-process pong did not stop within 5 s", ErrPeer))
		}
	}
	if s.ping != nil {
		errs = append(errs, s.ping.close())
	}
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, s.cleanups[i]())
	}
	return errors.Join(errs...)
}

// startPong runs an in-process pong on its own (optionally pinned) thread.
func (s *session) startPong(p ponger, cpu int) {
	s.pongDone = make(chan pongResult, 1)
	go func() {
		pin, err := sys.PinThread(cpu)
		if err != nil {
			s.onStop()
			s.pongDone <- pongResult{err: err}
			return
		}
		n, err := p.serve(s.ctx, &s.stop)
		pin.Release()
		err = errors.Join(err, p.close())
		s.pongDone <- pongResult{n, err}
	}()
}

func (s *session) startChild(e endSpec, spec childSpec, files []*os.File, ns *netns.NS) (readyMsg, error) {
	spec.Role = "pong"
	spec.Transport, spec.Size, spec.CPU = e.transport, e.size, e.pongCPU
	p, err := startPeer(s.outer, e.launcher, ns, spec, files, s.onStop)
	if err != nil {
		return readyMsg{}, err
	}
	s.peer = p
	return p.ready(30 * time.Second)
}

// checkWait refuses a wait strategy outside the enumeration (a value set
// by code, not decoded: decoding already refuses unknown text).
func checkWait(w kind.Wait) error {
	if _, err := w.MarshalText(); err != nil {
		return fmt.Errorf("%w: --wait: %w", ErrUsage, err)
	}
	return nil
}

func (e endSpec) mwOptions() (mwOptions, error) {
	o := mwOptions{wait: e.wait, reliable: e.reliable, loan: e.path == "loan", size: e.size, depth: e.depth, keepLast: e.keepLast, dedicated: e.dedicated}
	switch e.transport {
	case TShm:
		o.transport = middleware.TransportShm
	case TIntra:
		o.transport = middleware.TransportIntra
	case TUDP:
		o.transport = middleware.TransportUDP
	}
	return o, nil
}

const (
	pingTopic = "bench/ping"
	pongTopic = "bench/pong"
)

// openSession sets up transport e for one ping-pong and returns it ready
// to time (handshake done).
func openSession(ctx context.Context, e endSpec) (s *session, err error) {
	sess := &session{outer: ctx}
	sess.ctx, sess.cancel = context.WithCancel(ctx)
	s = sess
	// Spinning loops poll stop, not ctx: cancelling the caller's ctx must
	// reach them too. The callback runs on its own goroutine, so it holds
	// sess, not the result s that the deferred clean-up below sets to nil.
	context.AfterFunc(sess.ctx, func() { sess.stop.Store(true) })
	defer func() {
		if err != nil {
			_ = s.close()
			s = nil
		}
	}()
	buf := make([]byte, e.size)
	switch e.transport {
	case TRawSpin, TRawFutex, TRawSpinIntra:
		f, sh, err := openRawShared(e.size)
		if err != nil {
			return nil, err
		}
		futex := e.transport == TRawFutex
		s.ping = &rawPing{sh: sh, futex: futex, buf: buf, stop: &s.stop}
		if e.transport == TRawSpinIntra {
			f.Close()
			s.startPong(&rawPong{sh: newRawShared(sh.mem, e.size), borrowed: true}, e.pongCPU)
			return s, nil
		}
		_, err = s.startChild(e, childSpec{}, []*os.File{f}, nil)
		f.Close()
		return s, err
	case TChan:
		l := &chanLink{req: make(chan uint64), resp: make(chan uint64), a: make([]byte, e.size), b: make([]byte, e.size)}
		s.ping = &chanPing{l: l, buf: buf, stop: &s.stop, done: s.ctx.Done()}
		s.startPong(&chanPong{l: l}, e.pongCPU)
		return s, nil
	case TUDS:
		a, b, err := sys.SocketPair(200 * time.Millisecond)
		if err != nil {
			return nil, err
		}
		s.ping = &udsPing{c: newFdConn(a), buf: buf, rbuf: make([]byte, e.size), stop: &s.stop}
		_, err = s.startChild(e, childSpec{}, []*os.File{b}, nil)
		b.Close()
		return s, err
	case TRawUDP, TUDP:
		return s, s.openUDP(e, buf)
	case TShm, TIntra:
		return s, s.openMW(e)
	}
	return nil, fmt.Errorf("%w: unknown transport %q (want one of %v)", ErrUsage, e.transport, Transports)
}

// openUDP sets up raw-udp or middleware udp, on loopback or across a
// namespace pair made for this session.
func (s *session) openUDP(e endSpec, buf []byte) error {
	parentIP, childIP := netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.AddrFrom4([4]byte{127, 0, 0, 1})
	var nsB *netns.NS
	if e.netns {
		pair, err := netns.NewPair(s.ctx, nil)
		if err != nil {
			return fmt.Errorf("%w: --netns: %v", ErrUnavailable, err)
		}
		s.addCleanup(pair.Close)
		s.nsA, nsB = pair.A, pair.B
		parentIP, childIP = pair.AAddr, pair.BAddr
	}
	spec := childSpec{ChildIP: childIP.String(), Dgram: e.dgram}
	if e.transport == TRawUDP {
		var sock *sys.UDPSocket
		var port int
		err := s.inA(func() error {
			var err error
			sock, err = sys.ListenUDP(parentIP.As4(), 0, 64<<20, 200*time.Millisecond)
			if err != nil {
				return err
			}
			port, err = sock.LocalPort()
			return err
		})
		if err != nil {
			return err
		}
		u, err := newUDPMsg(sock, e.dgram, e.rawGSO)
		if err != nil {
			sock.Close()
			return err
		}
		spec.GSO = u.gso
		s.ping = &rawUDPPing{u: u, buf: buf, rbuf: make([]byte, e.size), stop: &s.stop}
		spec.ParentAddr = netip.AddrPortFrom(parentIP, uint16(port)).String()
		r, err := s.startChild(e, spec, nil, nsB)
		if err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(r.Addr)
		if err != nil {
			return fmt.Errorf("%w: bad address %q in ready message", ErrPeer, r.Addr)
		}
		return sock.Connect(ap.Addr().As4(), int(ap.Port()))
	}
	// middleware udp
	o, err := e.mwOptions()
	if err != nil {
		return err
	}
	spec.Wait, spec.Path, spec.Reliable, spec.KeyFile, spec.Depth, spec.KeepLast = e.wait, e.path, e.reliable, e.keyFile, e.depth, e.keepLast
	spec.Dedicated = e.dedicated
	var end *mwEnd
	err = s.inA(func() error {
		port, err := freeUDPPort(parentIP)
		if err != nil {
			return err
		}
		spec.ParentAddr = netip.AddrPortFrom(parentIP, uint16(port)).String()
		node, err := middleware.OpenNode("bench-ping", &middleware.NodeOptions{Domain: benchDomain(), UDPKeyFile: e.keyFile})
		if err != nil {
			return mwErr("open node", err)
		}
		end = newMWEnd(node, o)
		end.ownNode, end.ctx = true, s.ctx
		s.ping = end
		return end.subscribe(o.contract(pongTopic, middleware.UDPConfig{Listen: spec.ParentAddr}), o)
	})
	if err != nil {
		return err
	}
	r, err := s.startChild(e, spec, nil, nsB)
	if err != nil {
		return err
	}
	err = s.inA(func() error {
		return end.publish(o.contract(pingTopic, middleware.UDPConfig{Peers: []string{r.Addr}}))
	})
	if err != nil {
		return err
	}
	return end.handshake(s.ctx)
}

func benchDomain() string { return "bench" + strconv.Itoa(os.Getpid()) }

// freeUDPPort asks the kernel for a free UDP port on ip (bind :0, close).
func freeUDPPort(ip netip.Addr) (int, error) {
	sock, err := sys.ListenUDP(ip.As4(), 0, 0, time.Second)
	if err != nil {
		return 0, err
	}
	defer sock.Close()
	return sock.LocalPort()
}

// openMW sets up middleware shm (child process) or intra (goroutine). The
// segments live in a private directory under /dev/shm removed by close.
func (s *session) openMW(e endSpec) error {
	o, err := e.mwOptions()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("/dev/shm", "hilrig-bench-")
	if err != nil {
		return fmt.Errorf("create segment directory: %w", err)
	}
	s.addCleanup(func() error { return os.RemoveAll(dir) })
	node, err := middleware.OpenNode("bench-ping", &middleware.NodeOptions{Domain: benchDomain(), ShmDir: dir})
	if err != nil {
		return mwErr("open node", err)
	}
	ping := newMWEnd(node, o)
	ping.ownNode, ping.ctx = true, s.ctx
	s.ping = ping
	if err := ping.subscribe(o.contract(pongTopic, middleware.UDPConfig{}), o); err != nil {
		return err
	}
	if err := ping.publish(o.contract(pingTopic, middleware.UDPConfig{})); err != nil {
		return err
	}
	if e.transport == TIntra {
		pong := newMWEnd(node, o)
		if err := pong.subscribe(o.contract(pingTopic, middleware.UDPConfig{}), o); err != nil {
			return err
		}
		if err := pong.publish(o.contract(pongTopic, middleware.UDPConfig{})); err != nil {
			_ = pong.close()
			return err
		}
		s.startPong(newMWPong(pong), e.pongCPU)
	} else {
		spec := childSpec{Wait: e.wait, Path: e.path, Reliable: e.reliable, Domain: benchDomain(), ShmDir: dir}
		if _, err := s.startChild(e, spec, nil, nil); err != nil {
			return err
		}
	}
	return ping.handshake(s.ctx)
}

// newChildPong builds the child's end from its spec (fd 3 carries the
// shared file or socket for the raw baselines). It returns the address the
// parent must send to, for UDP.
func newChildPong(spec childSpec) (ponger, string, error) {
	switch spec.Transport {
	case TRawSpin, TRawFutex:
		f := os.NewFile(3, "shared-memory")
		mem, err := sys.Map(f, rawMapSize(spec.Size))
		f.Close()
		if err != nil {
			return nil, "", err
		}
		return &rawPong{sh: newRawShared(mem, spec.Size), futex: spec.Transport == TRawFutex}, "", nil
	case TUDS:
		return &udsPong{c: newFdConn(os.NewFile(3, "uds")), rbuf: make([]byte, spec.Size)}, "", nil
	case TRawUDP:
		ip, err := netip.ParseAddr(spec.ChildIP)
		if err != nil {
			return nil, "", fmt.Errorf("child ip %q: %w", spec.ChildIP, err)
		}
		peer, err := netip.ParseAddrPort(spec.ParentAddr)
		if err != nil {
			return nil, "", fmt.Errorf("parent address %q: %w", spec.ParentAddr, err)
		}
		sock, err := sys.ListenUDP(ip.As4(), 0, 64<<20, 200*time.Millisecond)
		if err != nil {
			return nil, "", err
		}
		port, err := sock.LocalPort()
		if err == nil {
			err = sock.Connect(peer.Addr().As4(), int(peer.Port()))
		}
		var u *udpMsg
		if err == nil {
			u, err = newUDPMsg(sock, spec.Dgram, spec.GSO)
		}
		if err != nil {
			sock.Close()
			return nil, "", err
		}
		return &rawUDPPong{u: u, rbuf: make([]byte, spec.Size)},
			netip.AddrPortFrom(ip, uint16(port)).String(), nil
	case TShm, TUDP:
		e := endSpec{transport: spec.Transport, wait: spec.Wait, path: spec.Path, size: spec.Size, reliable: spec.Reliable, depth: spec.Depth, keepLast: spec.KeepLast, dedicated: spec.Dedicated}
		o, err := e.mwOptions()
		if err != nil {
			return nil, "", err
		}
		node, err := middleware.OpenNode("bench-pong", &middleware.NodeOptions{Domain: spec.Domain, ShmDir: spec.ShmDir, UDPKeyFile: spec.KeyFile})
		if err != nil {
			return nil, "", mwErr("open node", err)
		}
		end := newMWEnd(node, o)
		end.ownNode = true
		var addr string
		var in, out middleware.UDPConfig
		if spec.Transport == TUDP {
			ip, err := netip.ParseAddr(spec.ChildIP)
			if err != nil {
				_ = end.close()
				return nil, "", fmt.Errorf("child ip %q: %w", spec.ChildIP, err)
			}
			port, err := freeUDPPort(ip)
			if err != nil {
				_ = end.close()
				return nil, "", err
			}
			addr = netip.AddrPortFrom(ip, uint16(port)).String()
			in, out = middleware.UDPConfig{Listen: addr}, middleware.UDPConfig{Peers: []string{spec.ParentAddr}}
		}
		if err := end.subscribe(o.contract(pingTopic, in), o); err != nil {
			_ = end.close()
			return nil, "", err
		}
		if err := end.publish(o.contract(pongTopic, out)); err != nil {
			_ = end.close()
			return nil, "", err
		}
		return newMWPong(end), addr, nil
	}
	return nil, "", fmt.Errorf("%w: child: unknown transport %q", ErrUsage, spec.Transport)
}
