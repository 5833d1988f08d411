package scpi_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// vxiServer is an in-test ONC RPC server written from the VXI-11 and
// RFC 5531/1833 texts: a portmapper (prog 100000 v2, GETPORT) and the
// VXI-11 core channel (prog 0x0607AF v1: create_link 10, device_write 11,
// device_read 12, device_clear 15, destroy_link 23), with record marking.
// Its instrument answers *IDN? and BLK? (a definite-length block), and it
// returns replies in chunks of at most chunk bytes to exercise END handling.
type vxiServer struct {
	pm, core net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	out      []byte
	procs    []uint32
	chunk    int
	ese      int
}

func be32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func startVXI(t *testing.T) *vxiServer {
	s := &vxiServer{chunk: 7}
	var err error
	if s.pm, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if s.core, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{s.pm, s.core} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				s.wg.Add(1)
				go func() { defer s.wg.Done(); defer c.Close(); s.serve(c, ln == s.pm) }()
			}
		}()
	}
	t.Cleanup(func() { s.pm.Close(); s.core.Close(); s.wg.Wait() })
	return s
}

func (s *vxiServer) serve(c net.Conn, portmapper bool) {
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:]) & 0x7fffffff
		rec := make([]byte, n)
		if _, err := io.ReadFull(c, rec); err != nil {
			return
		}
		u := func() uint32 { v := binary.BigEndian.Uint32(rec); rec = rec[4:]; return v }
		xid := u()
		u() // CALL
		u() // rpcvers
		prog, vers, proc := u(), u(), u()
		u()
		rec = rec[u():] // cred
		u()
		rec = rec[u():] // verf
		var res []byte
		switch {
		case portmapper && prog == 100000 && vers == 2 && proc == 3:
			p, _, _ := u(), u(), u()
			port := uint32(0)
			if p == 0x0607AF {
				port = uint32(s.core.Addr().(*net.TCPAddr).Port)
			}
			res = be32(nil, port)
		case !portmapper && prog == 0x0607AF && vers == 1:
			s.mu.Lock()
			s.procs = append(s.procs, proc)
			s.mu.Unlock()
			res = s.core1(proc, u, &rec)
		default:
			res = nil
		}
		// reply: xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE, SUCCESS, results
		out := be32(nil, 0)
		out = be32(out, xid)
		out = be32(out, 1)
		out = be32(out, 0)
		out = be32(out, 0)
		out = be32(out, 0)
		out = be32(out, 0)
		out = append(out, res...)
		binary.BigEndian.PutUint32(out, 0x80000000|uint32(len(out)-4))
		// send in two fragments to exercise fragment joining
		mid := 4 + (len(out)-4)/2
		f1 := be32(nil, uint32(mid-4))
		f1 = append(f1, out[4:mid]...)
		f2 := be32(nil, 0x80000000|uint32(len(out)-mid))
		f2 = append(f2, out[mid:]...)
		c.Write(f1)
		c.Write(f2)
	}
}

func (s *vxiServer) core1(proc uint32, u func() uint32, rec *[]byte) []byte {
	switch proc {
	case 10: // create_link
		u()
		u()
		u()
		n := u()
		dev := string((*rec)[:n])
		code := uint32(0)
		if dev != "inst0" {
			code = 3
		}
		r := be32(nil, code)
		r = be32(r, 42)    // lid
		r = be32(r, 0)     // abortPort
		return be32(r, 16) // maxRecvSize: small, forces chunked writes
	case 11: // device_write
		u()
		u()
		u()
		u()
		n := u()
		data := string((*rec)[:n])
		s.mu.Lock()
		s.pendingIn(data)
		s.mu.Unlock()
		return be32(be32(nil, 0), n)
	case 12: // device_read
		u()
		req := int(u())
		s.mu.Lock()
		n := min(req, s.chunk, len(s.out))
		data := s.out[:n]
		s.out = s.out[n:]
		reason := uint32(1) // REQCNT
		code := uint32(0)
		if len(s.out) == 0 {
			reason = 4 // END
		}
		if n == 0 {
			code = 15 // io timeout: nothing to read
		}
		s.mu.Unlock()
		r := be32(nil, code)
		r = be32(r, reason)
		r = be32(r, uint32(len(data)))
		r = append(r, data...)
		for len(r)%4 != 0 {
			r = append(r, 0)
		}
		return r
	case 15: // device_clear
		s.mu.Lock()
		s.out = nil
		s.mu.Unlock()
		return be32(nil, 0)
	case 23: // destroy_link
		return be32(nil, 0)
	}
	return be32(nil, 8)
}

var inbuf strings.Builder

func (s *vxiServer) pendingIn(data string) {
	inbuf.WriteString(data)
	for {
		all := inbuf.String()
		i := strings.IndexByte(all, '\n')
		if i < 0 {
			return
		}
		cmd := all[:i]
		inbuf.Reset()
		inbuf.WriteString(all[i+1:])
		if v, ok := strings.CutPrefix(cmd, "*ESE "); ok {
			s.ese, _ = strconv.Atoi(v)
		}
		switch cmd {
		case "*IDN?":
			s.out = append(s.out, "SIM,VXI11,0001,1.0\n"...)
		case "*OPC?":
			s.out = append(s.out, "1\n"...)
		case "*ESE?":
			s.out = append(s.out, strconv.Itoa(s.ese)+"\n"...)
		case "BLK?":
			payload := bytes.Repeat([]byte("ab\ncd"), 20)
			s.out = append(s.out, "#3"+strconv.Itoa(len(payload))...)
			s.out = append(s.out, payload...)
			s.out = append(s.out, '\n')
		}
	}
}

func TestVXI11RoundTrip(t *testing.T) {
	s := startVXI(t)
	c, err := scpi.DialVXI11(t.Context(), "127.0.0.1", scpi.VXI11Options{Portmapper: s.pm.Addr().String(),
		Options: scpi.Options{Timeout: 2 * time.Second, DrainQuiet: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Query(t.Context(), "*IDN?")
	if err != nil || got != "SIM,VXI11,0001,1.0" {
		t.Fatalf("*IDN? = %q, %v", got, err)
	}
	blk, err := c.QueryBlock(t.Context(), "BLK?")
	if err != nil || !bytes.Equal(blk, bytes.Repeat([]byte("ab\ncd"), 20)) {
		t.Fatalf("BLK? = %q, %v", blk, err)
	}
	if err := c.Resync(t.Context()); err != nil {
		t.Fatalf("resync over VXI-11 (device_clear, *CLS, *ESE? marker): %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[uint32]bool{}
	for _, p := range s.procs {
		seen[p] = true
	}
	for _, p := range []uint32{10, 11, 12, 15, 23} {
		if !seen[p] {
			t.Errorf("procedure %d never called; calls %v", p, s.procs)
		}
	}
}
