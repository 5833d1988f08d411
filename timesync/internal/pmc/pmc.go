// Package pmc talks to a local ptp4l over its management Unix socket (the
// "pmc -u" protocol), using github.com/facebook/time's protocol.MgmtClient
// for encoding. With the fake in pmcsim it is the only importer of
// facebook/time/ptp in hilrig. subscribe.go adds ptp4l's port-state
// subscription (SUBSCRIBE_EVENTS_NP), which facebook/time lacks.
//
// It exists because the upstream client has sharp edges (see
// docs/timesync.md and shared/docs/ptp/README.md):
//   - ptp4l answers to the client's source address, so the client socket
//     must be bound to a path of its own; an unbound socket gets no reply
//     and simply times out;
//   - MgmtClient.Communicate has no timeout and does not match replies to
//     requests, so a reply that arrives after a timeout would be taken as
//     the answer to the next request. Here every request has a read
//     deadline and replies are matched by sequence id and management id;
//     anything else is drained and counted;
//   - after ptp4l restarts, the connected socket points at a dead inode
//     (ECONNREFUSED); the client redials on the next request.
package pmc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// Errors callers branch on. The timesync package re-exports them.
var (
	// ErrPermission: the ptp4l socket refused us (it is 0660 root).
	ErrPermission = errors.New("permission denied on ptp4l socket")
	// ErrNoSocket: nothing exists at the socket path.
	ErrNoSocket = errors.New("no such ptp4l socket")
	// ErrNotListening: the path exists but no ptp4l is bound to it
	// (ptp4l was killed and left its socket file behind).
	ErrNotListening = errors.New("ptp4l socket not listening")
	// ErrNotSocket: something other than a socket is at the path (a
	// regular file, a directory, /dev/null): the uds_address is wrong.
	ErrNotSocket = errors.New("not a ptp4l socket")
	// ErrTimeout: no matching reply within the per-request deadline.
	ErrTimeout = errors.New("no reply from ptp4l")
	// ErrManagementError: ptp4l answered with MANAGEMENT_ERROR_STATUS.
	ErrManagementError = errors.New("ptp4l management error")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("pmc client closed")
	// ErrReplaced: the socket path now names another socket than the one
	// the client was talking to (another ptp4l bound the same path, or
	// ptp4l restarted without the old socket failing us first). The
	// client has reconnected to the new one; the answer in progress
	// would have come from the old one, so it is not given.
	ErrReplaced = errors.New("ptp4l socket replaced")
)

// IDSynchronizationUncertainNP is linuxptp's MID_SYNCHRONIZATION_UNCERTAIN_NP
// (tlv.h); facebook/time does not define it.
const IDSynchronizationUncertainNP protocol.ManagementID = 0xC006

// SyncUncertainTLV is the SYNCHRONIZATION_UNCERTAIN_NP data field
// (linuxptp struct management_tlv_datum: one value octet, one reserved).
type SyncUncertainTLV struct {
	protocol.ManagementTLVHead
	Val      uint8
	Reserved uint8
}

var registerOnce sync.Once

func registerDecoders() {
	// RegisterMgmtTLVDecoder writes a package-level map in facebook/time;
	// doing it once, before any client exists, keeps the map read-only
	// while requests are decoded concurrently.
	registerOnce.Do(func() {
		protocol.RegisterMgmtTLVDecoder(IDSynchronizationUncertainNP, func(data []byte) (protocol.ManagementTLV, error) {
			tlv := &SyncUncertainTLV{}
			if err := binary.Read(bytes.NewReader(data), binary.BigEndian, tlv); err != nil {
				return nil, err
			}
			return tlv, nil
		})
	})
}

// Client is one management connection to one ptp4l. Safe for concurrent
// use (requests are serialised: the protocol is one request in flight).
type Client struct {
	remote  string
	timeout time.Duration

	mu      sync.Mutex
	dir     string // our own temp dir holding the bound client socket
	conn    *net.UnixConn
	mc      protocol.MgmtClient
	closed  bool
	drained uint64
	// peer is the socket file the connection was made to; each request
	// checks the path still names it (os.SameFile: device and inode).
	peer os.FileInfo
	// gen counts successful connects.
	gen uint64
}

// Dial creates a client for the ptp4l socket at remote. timeout is the
// per-request deadline (0 → 1 s). It connects immediately so a wrong path
// or missing permission is reported here; later failures redial.
func Dial(ctx context.Context, remote string, timeout time.Duration) (*Client, error) {
	registerDecoders()
	if timeout <= 0 {
		timeout = time.Second
	}
	c := &Client{remote: remote, timeout: timeout}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.connectLocked(); err != nil {
		c.cleanupLocked()
		return nil, err
	}
	return c, nil
}

// Generation counts the client's successful connects: it changes when the
// client reconnected (ptp4l restarted, or another socket took the path).
func (c *Client) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Remote returns the ptp4l socket path.
func (c *Client) Remote() string { return c.remote }

// Drained returns how many stale or unmatched replies were discarded.
func (c *Client) Drained() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drained
}

// Close releases the socket and removes the client's socket file.
// Idempotent; later requests return ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.cleanupLocked()
	return nil
}

func (c *Client) cleanupLocked() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
		c.dir = ""
	}
}

func (c *Client) connectLocked() error {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
	if c.dir == "" {
		// A private directory: the client socket path must be ours alone
		// and short (sun_path is 108 bytes).
		dir, err := os.MkdirTemp("", "hilrig-pmc-")
		if err != nil {
			return fmt.Errorf("make client socket dir: %w", err)
		}
		c.dir = dir
	}
	local := filepath.Join(c.dir, "c.sock")
	_ = os.Remove(local) // a previous connection's file
	conn, err := net.DialUnix("unixgram",
		&net.UnixAddr{Name: local, Net: "unixgram"},
		&net.UnixAddr{Name: c.remote, Net: "unixgram"})
	if err != nil {
		return c.classify(err)
	}
	c.conn = conn
	c.gen++
	// The file the path names now; connect(2) resolved the same path an
	// instant ago, so a replacement in between is caught by the next
	// request at the latest.
	c.peer, _ = os.Stat(c.remote)
	// Keep the sequence counter across reconnects: a late reply to the
	// old connection's last request may still reach the re-bound path,
	// and a restarted counter would match it.
	c.mc = protocol.MgmtClient{Connection: conn, Sequence: c.mc.Sequence}
	return nil
}

// classify maps socket errors to the sentinels, keeping the cause.
func (c *Client) classify(err error) error { return classify(c.remote, err) }

// classify maps an error of a socket talking to the ptp4l at remote to
// the sentinels, keeping the cause.
func classify(remote string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w: %s: %w", ErrPermission, remote, err)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %s: %w", ErrNoSocket, remote, err)
	case errors.Is(err, syscall.EPROTOTYPE):
		// connect(2) of a datagram socket to a stream socket's path.
		return fmt.Errorf("%w: %s is a stream (SOCK_STREAM) socket; ptp4l's management socket (uds_address) is a datagram (SOCK_DGRAM) socket: %w", ErrNotSocket, remote, err)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOTCONN), errors.Is(err, syscall.ENOTSOCK):
		// connect(2) answers ECONNREFUSED for a path that is no socket
		// at all, too: look, so a typo in uds_address is not blamed on a
		// dead ptp4l.
		if what, ok := nonSocket(remote); ok {
			return fmt.Errorf("%w: %s is %s, not a socket", ErrNotSocket, remote, what)
		}
		return fmt.Errorf("%w: %s: %w", ErrNotListening, remote, err)
	}
	return fmt.Errorf("ptp4l socket %s: %w", remote, err)
}

// nonSocket reports what is at path when it exists and is not a socket.
func nonSocket(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	m := fi.Mode()
	switch {
	case m&fs.ModeSocket != 0:
		return "", false
	case m.IsRegular():
		return "a regular file", true
	case m.IsDir():
		return "a directory", true
	case m&fs.ModeCharDevice != 0:
		return "a character device", true
	case m&fs.ModeDevice != 0:
		return "a block device", true
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe", true
	}
	return "a " + m.Type().String() + " file", true
}

// Do sends req and waits for the matching RESPONSE (or ACKNOWLEDGE) TLV
// with the same management id, within the per-request deadline or ctx,
// whichever is sooner. Blocks.
func (c *Client) Do(ctx context.Context, req *protocol.Management) (*protocol.Management, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.conn == nil {
		if err := c.connectLocked(); err != nil {
			return nil, err
		}
	} else if err := c.checkPeerLocked(); err != nil {
		return nil, err
	}
	resp, err := c.doLocked(ctx, req)
	if err != nil && !errors.Is(err, ErrManagementError) && !errors.Is(err, ErrTimeout) && ctx.Err() == nil {
		// A socket error means ptp4l went away or restarted (its new
		// socket is a new inode): the next request dials afresh. A
		// timeout keeps the socket, so the late reply is drained and
		// never mistaken for the next answer.
		_ = c.conn.Close()
		c.conn = nil
	}
	return resp, err
}

// checkPeerLocked makes sure the path still names the socket the
// connection was made to. A connected datagram socket keeps talking to
// the socket it was connected to even after another ptp4l unlinked the
// path and bound its own there: without this check a long-running reader
// would go on reading the old daemon while every new reader sees the new
// one. On a change it reconnects and returns ErrReplaced once.
func (c *Client) checkPeerLocked() error {
	if c.peer == nil {
		return nil
	}
	fi, err := os.Stat(c.remote)
	if err == nil && os.SameFile(fi, c.peer) {
		return nil
	}
	old := c.peer
	_ = c.conn.Close()
	c.conn = nil
	if cerr := c.connectLocked(); cerr != nil {
		// Gone altogether: say so as any failed dial does.
		return cerr
	}
	now := "unknown"
	if c.peer != nil {
		now = c.peer.ModTime().Format("15:04:05.000000")
	}
	return fmt.Errorf("%w: %s now names another socket than the one this reader was connected to (bound at %s, the new one at %s): another ptp4l bound the path, or ptp4l restarted; reconnected, the new one is read from the next request",
		ErrReplaced, c.remote, old.ModTime().Format("15:04:05.000000"), now)
}

func (c *Client) doLocked(ctx context.Context, req *protocol.Management) (*protocol.Management, error) {
	c.drainLocked()
	id := req.TLV.MgmtID()
	deadline := time.Now().Add(c.timeout)
	ctxDeadline := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxDeadline = d, true
	}
	// ended names why a call ended early: ctx (cancelled, or its deadline
	// was the sooner one) or our own per-request deadline (nil).
	ended := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("ptp4l socket %s: %s: %w", c.remote, idName(id), cerr)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && ctxDeadline {
			return fmt.Errorf("ptp4l socket %s: %s: %w", c.remote, idName(id), context.DeadlineExceeded)
		}
		return nil
	}
	// One deadline covers the write and the read. The write needs it too:
	// a connected Unix datagram sender blocks once the peer's receive
	// queue is full (net.unix.max_dgram_qlen, 10), which is what a
	// stopped (SIGSTOP) or wedged ptp4l looks like; without a deadline
	// that write never returned. ctx cancellation moves the deadline to
	// now, which wakes either call.
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, c.classify(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
	defer stop()
	if err := c.mc.SendPacket(req); err != nil {
		if e := ended(err); e != nil {
			return nil, e
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("%w on %s: %s not even accepted within %v: its receive queue is full (ptp4l stopped, hung or not reading its socket?)", ErrTimeout, c.remote, idName(id), c.timeout)
		}
		return nil, c.classify(err)
	}
	seq := c.mc.Sequence
	buf := make([]byte, 1500)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if e := ended(err); e != nil {
				return nil, e
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("%w on %s to %s within %v", ErrTimeout, c.remote, idName(id), c.timeout)
			}
			return nil, c.classify(err)
		}
		resp, match, err := decode(buf[:n], seq, id)
		if !match {
			c.drained++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ptp4l socket %s: %w", c.remote, err)
		}
		return resp, nil
	}
}

// maxDrain bounds one drain: a peer that floods us must not keep a
// request from being sent (whatever is left is skipped by matching).
const maxDrain = 64

// drainLocked discards replies that arrived after an earlier request timed
// out, without blocking (MSG_DONTWAIT on the raw socket).
func (c *Client) drainLocked() {
	rc, err := c.conn.SyscallConn()
	if err != nil {
		return
	}
	var b [1500]byte
	for range maxDrain {
		got := false
		_ = rc.Read(func(fd uintptr) bool {
			n, err := recvNonblock(fd, b[:])
			got = err == nil && n >= 0
			return true // never wait
		})
		if !got {
			return
		}
		c.drained++
	}
}

// decode parses one datagram. match reports whether it answers request
// seq/id; a non-matching datagram is a late reply to someone else.
func decode(b []byte, seq uint16, id protocol.ManagementID) (*protocol.Management, bool, error) {
	m := &protocol.Management{}
	err := m.UnmarshalBinary(b)
	if errors.Is(err, protocol.ErrManagementMsgErrorStatus) {
		e := &protocol.ManagementMsgErrorStatus{}
		if derr := e.UnmarshalBinary(b); derr != nil {
			return nil, false, nil
		}
		if e.SequenceID != seq || e.ManagementID != id {
			return nil, false, nil
		}
		return nil, true, fmt.Errorf("%w: %s answered %s", ErrManagementError, idName(id), e.ManagementErrorID)
	}
	if err != nil {
		// Undecodable: if the header says it is ours, report it.
		if len(b) >= 32 && binary.BigEndian.Uint16(b[30:32]) == seq {
			return nil, true, fmt.Errorf("decode %s reply: %w", idName(id), err)
		}
		return nil, false, nil
	}
	if m.SequenceID != seq || m.TLV == nil || m.TLV.MgmtID() != id {
		return nil, false, nil
	}
	if a := m.Action(); a != protocol.RESPONSE && a != protocol.ACKNOWLEDGE {
		return nil, false, nil
	}
	return m, true, nil
}

// Decode is decode exported for the fuzz test: it must never panic.
func Decode(b []byte, seq uint16, id protocol.ManagementID) (*protocol.Management, bool, error) {
	return decode(b, seq, id)
}

func idName(id protocol.ManagementID) string {
	switch id {
	case protocol.IDCurrentDataSet:
		return "GET CURRENT_DATA_SET"
	case protocol.IDParentDataSet:
		return "GET PARENT_DATA_SET"
	case protocol.IDDefaultDataSet:
		return "GET DEFAULT_DATA_SET"
	case protocol.IDTimeStatusNP:
		return "GET TIME_STATUS_NP"
	case protocol.IDPortPropertiesNP:
		return "GET PORT_PROPERTIES_NP"
	case IDSynchronizationUncertainNP:
		return "SET SYNCHRONIZATION_UNCERTAIN_NP"
	}
	return fmt.Sprintf("management id 0x%04x", uint16(id))
}

// CurrentDataSet queries CURRENT_DATA_SET. Blocks.
func (c *Client) CurrentDataSet(ctx context.Context) (*protocol.CurrentDataSetTLV, error) {
	return get[*protocol.CurrentDataSetTLV](ctx, c, protocol.CurrentDataSetRequest())
}

// ParentDataSet queries PARENT_DATA_SET. Blocks.
func (c *Client) ParentDataSet(ctx context.Context) (*protocol.ParentDataSetTLV, error) {
	return get[*protocol.ParentDataSetTLV](ctx, c, protocol.ParentDataSetRequest())
}

// DefaultDataSet queries DEFAULT_DATA_SET. Blocks.
func (c *Client) DefaultDataSet(ctx context.Context) (*protocol.DefaultDataSetTLV, error) {
	return get[*protocol.DefaultDataSetTLV](ctx, c, protocol.DefaultDataSetRequest())
}

// TimeStatusNP queries ptp4l's TIME_STATUS_NP. Blocks.
func (c *Client) TimeStatusNP(ctx context.Context) (*protocol.TimeStatusNPTLV, error) {
	return get[*protocol.TimeStatusNPTLV](ctx, c, protocol.TimeStatusNPRequest())
}

// PortPropertiesNP queries ptp4l's PORT_PROPERTIES_NP (first port). Blocks.
func (c *Client) PortPropertiesNP(ctx context.Context) (*protocol.PortPropertiesNPTLV, error) {
	return get[*protocol.PortPropertiesNPTLV](ctx, c, protocol.PortPropertiesNPRequest())
}

// SetSynchronizationUncertain sends SET SYNCHRONIZATION_UNCERTAIN_NP val
// (0 false, 1 true, 0xff don't care) and returns the value ptp4l reports
// back. With free_running 1, ptp4l keeps the slave port UNCALIBRATED until
// this is set to 0. Blocks.
func (c *Client) SetSynchronizationUncertain(ctx context.Context, val uint8) (uint8, error) {
	const (
		headSize = 48 // ManagementMsgHead: header 34 + target 10 + 4
		tlvSize  = 8  // TLVHead 4 + managementId 2 + datum 2
	)
	req := &protocol.Management{
		ManagementMsgHead: protocol.ManagementMsgHead{
			Header: protocol.Header{
				SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(protocol.MessageManagement, 0),
				Version:            protocol.Version,
				MessageLength:      headSize + tlvSize,
				SourcePortIdentity: protocol.PortIdentity{PortNumber: uint16(os.Getpid())},
				LogMessageInterval: protocol.MgmtLogMessageInterval,
			},
			TargetPortIdentity: protocol.DefaultTargetPortIdentity,
			ActionField:        protocol.SET,
		},
		TLV: &SyncUncertainTLV{
			ManagementTLVHead: protocol.ManagementTLVHead{
				TLVHead:      protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: tlvSize - 4},
				ManagementID: IDSynchronizationUncertainNP,
			},
			Val: val,
		},
	}
	tlv, err := get[*SyncUncertainTLV](ctx, c, req)
	if err != nil {
		return 0, err
	}
	return tlv.Val, nil
}

func get[T protocol.ManagementTLV](ctx context.Context, c *Client, req *protocol.Management) (T, error) {
	var zero T
	resp, err := c.Do(ctx, req)
	if err != nil {
		return zero, err
	}
	tlv, ok := resp.TLV.(T)
	if !ok {
		return zero, fmt.Errorf("ptp4l socket %s: %s: unexpected TLV %T", c.remote, idName(req.TLV.MgmtID()), resp.TLV)
	}
	return tlv, nil
}
