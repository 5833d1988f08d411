package scpi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

// ONC RPC (RFC 5531) and VXI-11 constants. Program numbers and procedure
// numbers are from the VXI-11 specification (VXIbus Consortium, "TCP/IP
// Instrument Protocol Specification" VXI-11 rev 1.0, section B.6, the RPCL
// description of the core channel) and RFC 1833 (portmapper v2).
const (
	rpcCall         = 0
	rpcReply        = 1
	rpcVersion      = 2
	msgAccepted     = 0
	acceptSuccess   = 0
	pmapProg        = 100000
	pmapVers        = 2
	pmapGetPort     = 3
	ipprotoTCP      = 6
	vxiCoreProg     = 0x0607AF // DEVICE_CORE
	vxiCoreVers     = 1
	procCreateLink  = 10
	procDevWrite    = 11
	procDevRead     = 12
	procDevClear    = 15
	procDestroyLink = 23

	flagEnd = 8

	reasonEnd = 4

	vxiErrIOTimeout = 15
	maxRecord       = 64 << 20
)

// rpcClient is an ONC RPC client over TCP with record marking (RFC 5531
// section 11): each record is sent as one fragment whose 4-byte header has
// the last-fragment bit set; replies may arrive in several fragments.
type rpcClient struct {
	c          net.Conn
	prog, vers uint32
	xid        atomic.Uint32
}

func (r *rpcClient) call(proc uint32, args []byte, dl time.Time) ([]byte, error) {
	xid := r.xid.Add(1)
	var e xdrEnc
	e.u32(0) // record mark, patched below
	e.u32(xid)
	e.u32(rpcCall)
	e.u32(rpcVersion)
	e.u32(r.prog)
	e.u32(r.vers)
	e.u32(proc)
	e.u32(0) // cred AUTH_NONE
	e.u32(0)
	e.u32(0) // verf AUTH_NONE
	e.u32(0)
	e.b = append(e.b, args...)
	binary.BigEndian.PutUint32(e.b, 0x80000000|uint32(len(e.b)-4))
	if err := r.c.SetDeadline(dl); err != nil {
		return nil, err
	}
	if _, err := r.c.Write(e.b); err != nil {
		return nil, err
	}
	for {
		rec, err := readRecord(r.c)
		if err != nil {
			return nil, err
		}
		d := xdrDec{b: rec}
		if got := d.u32(); got != xid {
			// A reply to an earlier call that timed out on our side:
			// discard it, this is the RPC-level resynchronisation.
			continue
		}
		if d.u32() != rpcReply {
			return nil, fmt.Errorf("%w: RPC: not a reply", scopes.ErrGarbage)
		}
		if st := d.u32(); st != msgAccepted {
			return nil, fmt.Errorf("%w: RPC call denied (reply_stat %d)", scopes.ErrInstrument, st)
		}
		d.u32()       // verf flavor
		d.opaque(400) // verf body
		as := d.u32() // accept_stat
		if d.err != nil {
			return nil, d.err
		}
		if as != acceptSuccess {
			return nil, fmt.Errorf("%w: RPC prog %d proc %d not accepted (accept_stat %d)", scopes.ErrNotSupported, r.prog, proc, as)
		}
		return d.b, nil
	}
}

// readRecord reads one RPC record, joining its fragments.
func readRecord(rd io.Reader) ([]byte, error) {
	var out []byte
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			return nil, err
		}
		h := binary.BigEndian.Uint32(hdr[:])
		n := int(h & 0x7fffffff)
		if len(out)+n > maxRecord {
			return nil, fmt.Errorf("%w: RPC record of %d bytes", scopes.ErrGarbage, len(out)+n)
		}
		// Grow with the bytes actually received, not with the claimed
		// length, so a lying header cannot make us allocate 64 MiB.
		buf := bytes.NewBuffer(out)
		if _, err := io.CopyN(buf, rd, int64(n)); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		out = buf.Bytes()
		if h&0x80000000 != 0 {
			return out, nil
		}
	}
}

// VXI11Options configure [DialVXI11].
type VXI11Options struct {
	Options
	// Portmapper is the portmapper address; default host:111.
	Portmapper string
	// Device is the VXI-11 device name; default "inst0".
	Device string
}

// vxiTransport is SCPI over the VXI-11 core channel.
type vxiTransport struct {
	rpc     *rpcClient
	lid     uint32
	maxRecv uint32
}

// DialVXI11 asks the portmapper at host:111 (or o.Portmapper) for the
// VXI-11 core channel port, connects and creates a link to o.Device. It
// blocks until linked, ctx ends or o.Timeout passes.
func DialVXI11(ctx context.Context, host string, o VXI11Options) (*Conn, error) {
	o.Options = o.Options.withDefaults()
	if o.Device == "" {
		o.Device = "inst0"
	}
	if o.Portmapper == "" {
		o.Portmapper = net.JoinHostPort(host, "111")
	}
	dl := time.Now().Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	var d net.Dialer
	dctx, cancel := context.WithDeadline(ctx, dl)
	defer cancel()
	pc, err := d.DialContext(dctx, "tcp", o.Portmapper)
	if err != nil {
		return nil, fmt.Errorf("vxi11 %s: portmapper: %w", host, err)
	}
	pm := &rpcClient{c: pc, prog: pmapProg, vers: pmapVers}
	var a xdrEnc
	a.u32(vxiCoreProg)
	a.u32(vxiCoreVers)
	a.u32(ipprotoTCP)
	a.u32(0)
	res, err := pm.call(pmapGetPort, a.b, dl)
	pc.Close()
	if err != nil {
		return nil, fmt.Errorf("vxi11 %s: portmapper GETPORT: %w", host, err)
	}
	rd := xdrDec{b: res}
	port := rd.u32()
	if rd.err != nil || port == 0 || port > 65535 {
		return nil, fmt.Errorf("vxi11 %s: portmapper has no VXI-11 core channel (port %d): %w", host, port, scopes.ErrNotSupported)
	}
	h, _, err := net.SplitHostPort(o.Portmapper)
	if err != nil {
		h = host
	}
	cc, err := d.DialContext(dctx, "tcp", net.JoinHostPort(h, strconv.Itoa(int(port))))
	if err != nil {
		return nil, fmt.Errorf("vxi11 %s: core channel: %w", host, err)
	}
	t := &vxiTransport{rpc: &rpcClient{c: cc, prog: vxiCoreProg, vers: vxiCoreVers}}
	// create_link: Create_LinkParms { long clientId; bool lockDevice;
	// unsigned long lock_timeout; string device<>; }
	var cl xdrEnc
	cl.u32(uint32(os.Getpid()))
	cl.u32(0)
	cl.u32(0)
	cl.opaque([]byte(o.Device))
	res, err = t.rpc.call(procCreateLink, cl.b, dl)
	if err != nil {
		cc.Close()
		return nil, fmt.Errorf("vxi11 %s: create_link: %w", host, err)
	}
	// Create_LinkResp { Device_ErrorCode error; Device_Link lid;
	// unsigned short abortPort; unsigned long maxRecvSize; }
	rd = xdrDec{b: res}
	code := rd.u32()
	t.lid = rd.u32()
	rd.u32()
	t.maxRecv = rd.u32()
	if rd.err != nil {
		cc.Close()
		return nil, fmt.Errorf("vxi11 %s: create_link reply: %w", host, rd.err)
	}
	if code != 0 {
		cc.Close()
		return nil, fmt.Errorf("vxi11 %s: create_link %q: %w", host, o.Device, vxiError(code))
	}
	if t.maxRecv == 0 || t.maxRecv > 1<<20 {
		t.maxRecv = 1 << 20
	}
	return newConn(t, "vxi11://"+host+"/"+o.Device, o.Options), nil
}

// vxiErrors are the Device_ErrorCodes (VXI-11 section B.5.1) with a
// name: the sentinel each maps to and the name.
var vxiErrors = map[uint32]struct {
	kind error
	name string
}{
	1:               {scopes.ErrInstrument, "syntax error"},
	3:               {scopes.ErrInstrument, "device not accessible"},
	4:               {scopes.ErrInstrument, "invalid link identifier"},
	8:               {scopes.ErrNotSupported, "operation not supported"},
	11:              {scopes.ErrInstrument, "device locked by another link"},
	vxiErrIOTimeout: {scopes.ErrTimeout, "I/O timeout"},
	17:              {scopes.ErrInstrument, "I/O error"},
	23:              {scopes.ErrInstrument, "abort"},
}

// vxiError maps a Device_ErrorCode (VXI-11 section B.5.1) to an error.
func vxiError(code uint32) error {
	if e, ok := vxiErrors[code]; ok {
		if code == vxiErrIOTimeout {
			return fmt.Errorf("%w: VXI-11 %s (error %d)", e.kind, e.name, code)
		}
		return fmt.Errorf("%w: VXI-11 %s (%d)", e.kind, e.name, code)
	}
	return fmt.Errorf("%w: VXI-11 error %d", scopes.ErrInstrument, code)
}

func ioTimeoutMs(dl time.Time) uint32 {
	ms := time.Until(dl).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	return uint32(min(ms, 1<<31))
}

// rpcDeadline gives the instrument's own io_timeout a grace period before
// the socket gives up, so the instrument's timeout error wins when it can.
func rpcDeadline(dl time.Time) time.Time { return dl.Add(500 * time.Millisecond) }

func (v *vxiTransport) write(p []byte, dl time.Time) error {
	for len(p) > 0 {
		n := min(len(p), int(v.maxRecv))
		// Device_WriteParms { lid; io_timeout; lock_timeout; flags; opaque data<> }
		var e xdrEnc
		e.u32(v.lid)
		e.u32(ioTimeoutMs(dl))
		e.u32(0)
		flags := uint32(0)
		if n == len(p) {
			flags |= flagEnd
		}
		e.u32(flags)
		e.opaque(p[:n])
		res, err := v.rpc.call(procDevWrite, e.b, rpcDeadline(dl))
		if err != nil {
			return err
		}
		d := xdrDec{b: res}
		code, size := d.u32(), d.u32()
		if d.err != nil {
			return d.err
		}
		if code != 0 {
			return vxiError(code)
		}
		if size == 0 || int(size) > n {
			return fmt.Errorf("%w: device_write accepted %d of %d bytes", scopes.ErrGarbage, size, n)
		}
		p = p[size:]
	}
	return nil
}

func (v *vxiTransport) read(p []byte, dl time.Time) (int, bool, error) {
	if !time.Now().Before(dl) {
		return 0, false, os.ErrDeadlineExceeded
	}
	req := min(len(p), int(v.maxRecv))
	// Device_ReadParms { lid; requestSize; io_timeout; lock_timeout; flags; char termChar }
	var e xdrEnc
	e.u32(v.lid)
	e.u32(uint32(req))
	e.u32(ioTimeoutMs(dl))
	e.u32(0)
	e.u32(0)
	e.u32(0)
	res, err := v.rpc.call(procDevRead, e.b, rpcDeadline(dl))
	if err != nil {
		return 0, false, err
	}
	// Device_ReadResp { Device_ErrorCode error; long reason; opaque data<> }
	d := xdrDec{b: res}
	code := d.u32()
	reason := d.u32()
	data := d.opaque(req)
	if d.err != nil {
		return 0, false, d.err
	}
	n := copy(p, data)
	if code == vxiErrIOTimeout {
		return n, false, os.ErrDeadlineExceeded
	}
	if code != 0 {
		return n, false, vxiError(code)
	}
	return n, reason&reasonEnd != 0, nil
}

func (v *vxiTransport) clear(dl time.Time) error {
	// Device_GenericParms { lid; flags; lock_timeout; io_timeout }
	var e xdrEnc
	e.u32(v.lid)
	e.u32(0)
	e.u32(0)
	e.u32(ioTimeoutMs(dl))
	res, err := v.rpc.call(procDevClear, e.b, rpcDeadline(dl))
	if err != nil {
		return err
	}
	d := xdrDec{b: res}
	if code := d.u32(); d.err == nil && code != 0 {
		return vxiError(code)
	}
	return d.err
}

func (v *vxiTransport) interrupt() { _ = v.rpc.c.SetDeadline(time.Unix(1, 0)) }

func (v *vxiTransport) close() error {
	var e xdrEnc
	e.u32(v.lid)
	_, err := v.rpc.call(procDestroyLink, e.b, time.Now().Add(2*time.Second))
	cerr := v.rpc.c.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("vxi11 destroy_link: %w", err)
	}
	return cerr
}
