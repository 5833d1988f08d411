package scopesim

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// VXI-11 server side (VXI-11 rev 1.0 section B.6 RPCL; RFC 5531 record
// marking; RFC 1833 portmapper v2 GETPORT). Each link has its own command
// queue and worker goroutine, like an instrument's parser: device_write
// returns at once, replies accumulate in the link's output buffer and
// device_read waits for them up to its io_timeout (then answers error 15).

type vxiLink struct {
	id     uint32
	in     chan string
	mu     sync.Mutex
	out    []byte
	wake   chan struct{}
	gen    uint64
	inPart strings.Builder
	closed bool
}

// close ends the link's worker; safe to call more than once.
func (l *vxiLink) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.in)
	}
	l.mu.Unlock()
}

func (l *vxiLink) emit(gen uint64, r string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return nil // cleared by device_clear while the reply was produced
	}
	l.out = append(l.out, r...)
	close(l.wake)
	l.wake = make(chan struct{})
	return nil
}

// PortmapperAddr is the address of the VXI-11 portmapper, "" without VXI11.
func (s *Server) PortmapperAddr() string {
	if len(s.vxiLns) == 0 {
		return ""
	}
	return s.vxiLns[0].Addr().String()
}

func (s *Server) startVXI11(ctx context.Context) error {
	var lc net.ListenConfig
	pmAddr := s.cfg.PortmapperListen
	if pmAddr == "" {
		pmAddr = "127.0.0.1:0"
	}
	pm, err := lc.Listen(ctx, "tcp", pmAddr)
	if err != nil {
		return fmt.Errorf("scopesim: vxi11 portmapper listen %s: %w", pmAddr, err)
	}
	host, _, _ := net.SplitHostPort(pm.Addr().String())
	core, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		pm.Close()
		return fmt.Errorf("scopesim: vxi11 core listen: %w", err)
	}
	s.vxiLns = []net.Listener{pm, core}
	s.links = map[uint32]*vxiLink{}
	corePort := uint32(core.Addr().(*net.TCPAddr).Port)
	for i, ln := range s.vxiLns {
		s.wg.Add(1)
		go s.acceptOn(ln, func(c net.Conn) { s.serveRPC(c, i == 0, corePort) })
	}
	return nil
}

type rpcDec struct {
	b  []byte
	ok bool
}

func (d *rpcDec) u32() uint32 {
	if len(d.b) < 4 {
		d.ok = false
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *rpcDec) opaque() []byte {
	n := int(d.u32())
	pad := (4 - n%4) % 4
	if !d.ok || n < 0 || n+pad > len(d.b) {
		d.ok = false
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n+pad:]
	return p
}

func put32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func putOpaque(b, p []byte) []byte {
	b = put32(b, uint32(len(p)))
	b = append(b, p...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func (s *Server) serveRPC(c net.Conn, portmapper bool, corePort uint32) {
	defer s.wg.Done()
	var owned []uint32
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		for _, id := range owned {
			if l, ok := s.links[id]; ok {
				delete(s.links, id)
				l.close()
			}
		}
		s.mu.Unlock()
		c.Close()
	}()
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		h := binary.BigEndian.Uint32(hdr[:])
		if h&0x80000000 == 0 || h&0x7fffffff > 1<<20 {
			return // multi-fragment calls are not used by clients; refuse
		}
		rec := make([]byte, h&0x7fffffff)
		if _, err := io.ReadFull(c, rec); err != nil {
			return
		}
		d := &rpcDec{b: rec, ok: true}
		xid := d.u32()
		d.u32() // CALL
		d.u32() // rpcvers
		prog, vers, proc := d.u32(), d.u32(), d.u32()
		d.u32()
		d.opaque() // cred
		d.u32()
		d.opaque() // verf
		if !d.ok {
			return
		}
		var res []byte
		accept := uint32(0)
		switch {
		case portmapper && prog == 100000 && vers == 2:
			switch proc {
			case 0:
			case 3: // GETPORT(prog, vers, prot, port)
				p, v, prot := d.u32(), d.u32(), d.u32()
				port := uint32(0)
				if p == 0x0607AF && v == 1 && prot == 6 {
					port = corePort
				}
				res = put32(nil, port)
			default:
				accept = 3 // PROC_UNAVAIL
			}
		case !portmapper && prog == 0x0607AF && vers == 1:
			var lid uint32
			res, lid = s.vxiCore(proc, d)
			if lid != 0 {
				owned = append(owned, lid)
			}
			if res == nil {
				accept = 3
			}
		default:
			accept = 1 // PROG_UNAVAIL
		}
		out := put32(nil, 0)
		out = put32(out, xid)
		out = put32(out, 1) // REPLY
		out = put32(out, 0) // MSG_ACCEPTED
		out = put32(out, 0) // verf AUTH_NONE
		out = put32(out, 0)
		out = put32(out, accept)
		out = append(out, res...)
		binary.BigEndian.PutUint32(out, 0x80000000|uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// vxiCore runs one core-channel procedure; lid is non-zero for a new link.
func (s *Server) vxiCore(proc uint32, d *rpcDec) (res []byte, lid uint32) {
	link := func(id uint32) *vxiLink {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.links[id]
	}
	switch proc {
	case 10: // create_link(clientId, lockDevice, lock_timeout, device)
		d.u32()
		d.u32()
		d.u32()
		dev := string(d.opaque())
		if !d.ok || dev != "inst0" {
			r := put32(nil, 3) // device not accessible
			return put32(put32(put32(r, 0), 0), 0), 0
		}
		s.mu.Lock()
		s.nextLID++
		l := &vxiLink{id: s.nextLID, in: make(chan string, 256), wake: make(chan struct{})}
		s.links[l.id] = l
		s.mu.Unlock()
		s.wg.Add(1)
		go s.linkWorker(l)
		r := put32(nil, 0)
		r = put32(r, l.id)
		r = put32(r, 0)    // abortPort: abort channel not served
		r = put32(r, 1024) // maxRecvSize
		return r, l.id
	case 11: // device_write(lid, io_timeout, lock_timeout, flags, data)
		id := d.u32()
		d.u32()
		d.u32()
		d.u32()
		data := d.opaque()
		l := link(id)
		if !d.ok || l == nil {
			return put32(put32(nil, 4), 0), 0
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return put32(put32(nil, 4), 0), 0
		}
		l.inPart.Write(data)
		all := l.inPart.String()
		l.inPart.Reset()
		for {
			i := strings.IndexByte(all, '\n')
			if i < 0 {
				break
			}
			select {
			case l.in <- all[:i]:
			default: // input queue full: the instrument would assert a query error
			}
			all = all[i+1:]
		}
		l.inPart.WriteString(all)
		l.mu.Unlock()
		return put32(put32(nil, 0), uint32(len(data))), 0
	case 12: // device_read(lid, requestSize, io_timeout, lock_timeout, flags, termChar)
		id, req, ioTimeout := d.u32(), d.u32(), d.u32()
		l := link(id)
		if !d.ok || l == nil {
			return putOpaque(put32(put32(nil, 4), 0), nil), 0
		}
		t := time.NewTimer(time.Duration(ioTimeout) * time.Millisecond)
		defer t.Stop()
		for {
			l.mu.Lock()
			if len(l.out) > 0 {
				n := min(int(req), len(l.out))
				reason := uint32(1) // REQCNT
				if i := strings.IndexByte(string(l.out[:n]), '\n'); i >= 0 {
					n, reason = i+1, 4 // END with the message terminator
				}
				data := append([]byte(nil), l.out[:n]...)
				l.out = l.out[n:]
				l.mu.Unlock()
				return putOpaque(put32(put32(nil, 0), reason), data), 0
			}
			w := l.wake
			l.mu.Unlock()
			select {
			case <-w:
			case <-t.C:
				return putOpaque(put32(put32(nil, 15), 0), nil), 0 // I/O timeout
			case <-s.done:
				return putOpaque(put32(put32(nil, 23), 0), nil), 0
			}
		}
	case 15: // device_clear(lid, flags, lock_timeout, io_timeout)
		l := link(d.u32())
		if l == nil {
			return put32(nil, 4), 0
		}
		l.mu.Lock()
		l.gen++
		l.out = nil
		l.inPart.Reset()
		// Non-blocking drain: the worker may take the last queued line
		// between a length check and a receive.
	drain:
		for {
			select {
			case _, ok := <-l.in:
				if !ok {
					break drain
				}
			default:
				break drain
			}
		}
		l.mu.Unlock()
		return put32(nil, 0), 0
	case 23: // destroy_link(lid)
		id := d.u32()
		s.mu.Lock()
		l, ok := s.links[id]
		delete(s.links, id)
		s.mu.Unlock()
		if !ok {
			return put32(nil, 4), 0
		}
		l.close()
		return put32(nil, 0), 0
	}
	return nil, 0
}

func (s *Server) linkWorker(l *vxiLink) {
	defer s.wg.Done()
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-l.in:
			if !ok {
				return
			}
		case <-s.done:
			return
		}
		l.mu.Lock()
		gen := l.gen
		l.mu.Unlock()
		for _, cmd := range strings.Split(line, ";") {
			cmd = strings.TrimSpace(cmd)
			if cmd == "" {
				continue
			}
			reply, isQuery := s.execute(cmd)
			if isQuery && !s.sendReply(func(r string) error { return l.emit(gen, r) }, reply) {
				return
			}
		}
	}
}
