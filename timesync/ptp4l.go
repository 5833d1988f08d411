package timesync

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/timesync/internal/phc"
	"github.com/hilrig/hilrig/timesync/internal/pmc"
)

// PTP4LOptions tunes [DialPTP4L]. nil means defaults.
type PTP4LOptions struct {
	// RequestTimeout is the deadline of each management request
	// (0 → 500 ms). A Status is four requests.
	RequestTimeout time.Duration
	// PHC controls the PHC↔system offset reading: "" or "auto" looks the
	// port's interface up in this network namespace and reads its PHC if
	// it has one; "off" never does.
	PHC string
}

// PTP4L is the status of one ptp4l read over its management Unix socket
// (uds_address). Safe for concurrent use; requests are serialised.
// It reconnects by itself after ptp4l restarts.
type PTP4L struct {
	path    string
	phcMode string
	client  *pmc.Client
	closed  atomic.Bool

	phcMu    sync.Mutex
	phcIface string // interface the cached answer is for
	phcDev   string
	phcNote  string

	// The port-state subscription, made for the client's connection
	// generation subGen (a reconnect, to a restarted or another ptp4l,
	// needs a new one). subNote says why there is none.
	subMu   sync.Mutex
	sub     *pmc.Subscription
	subGen  uint64
	subNote string
	timeout time.Duration
}

var _ Source = (*PTP4L)(nil)

// DialPTP4L connects to the ptp4l management socket at path. It fails
// at once, with an error naming the path and the cause, when the socket
// does not exist ([ErrNoSocket]), is not a socket ([ErrNotSocket]),
// nobody listens on it ([ErrNotListening]) or the caller may not use it
// ([ErrPermission]). Blocks for one connect.
func DialPTP4L(ctx context.Context, path string, opts *PTP4LOptions) (*PTP4L, error) {
	if opts == nil {
		opts = &PTP4LOptions{}
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty ptp4l socket path (uds_address)", ErrBadConfig)
	}
	if len(path) >= maxSocketPath {
		return nil, fmt.Errorf("%w: ptp4l socket path %q is %d bytes: a Unix socket path holds at most %d (sun_path is %d bytes with the terminating NUL); ptp4l cannot bind it either, so use a shorter uds_address",
			ErrBadConfig, path, len(path), maxSocketPath-1, maxSocketPath)
	}
	mode := opts.PHC
	switch mode {
	case "", "auto":
		mode = "auto"
	case "off":
	default:
		return nil, fmt.Errorf("%w: PTP4LOptions.PHC %q: want auto or off", ErrBadConfig, opts.PHC)
	}
	to := opts.RequestTimeout
	if to <= 0 {
		to = 500 * time.Millisecond
	}
	c, err := pmc.Dial(ctx, path, to)
	if err != nil {
		return nil, explain(path, err)
	}
	return &PTP4L{path: path, phcMode: mode, client: c, timeout: to}, nil
}

// maxSocketPath is sizeof(sockaddr_un.sun_path) on Linux: 108 bytes,
// including the terminating NUL.
const maxSocketPath = 108

// explain adds the operator's next step to the sentinel errors.
func explain(path string, err error) error {
	switch {
	case errors.Is(err, ErrPermission):
		return fmt.Errorf("timesync: %w (ptp4l creates %s as 0660 root: run as root or in the socket's group)", err, path)
	case errors.Is(err, ErrNoSocket):
		return fmt.Errorf("timesync: %w (is ptp4l running with uds_address %s?)", err, path)
	case errors.Is(err, ErrNotListening):
		return fmt.Errorf("timesync: %w (the socket file is there but no ptp4l is bound to it: did ptp4l die? restart it with uds_address %s)", err, path)
	case errors.Is(err, ErrNotSocket):
		return fmt.Errorf("timesync: %w (not ptp4l's management socket: check the uds_address in ptp4l's config and the path given here)", err)
	case errors.Is(err, ErrTimeout):
		return fmt.Errorf("timesync: %w (ptp4l at %s is hung, overloaded, or in another domain)", err, path)
	case errors.Is(err, ErrReplaced):
		return fmt.Errorf("timesync: %w (this reading is dropped: lock must be earned anew from the new daemon)", err)
	}
	return fmt.Errorf("timesync: %w", err)
}

// Path returns the socket path.
func (p *PTP4L) Path() string { return p.path }

// Drained returns how many late or unmatched replies the client discarded.
func (p *PTP4L) Drained() uint64 { return p.client.Drained() }

// Status reads PORT_PROPERTIES_NP, CURRENT_DATA_SET, PARENT_DATA_SET and
// TIME_STATUS_NP (and the PHC offset when there is a PHC), and the
// port-state changes ptp4l pushed since the previous Status (subscribing
// at the first one and after each reconnect; see [PortEvents]). Blocks up
// to five request deadlines (six when it subscribes); ctx cancels it. On
// error the returned Status still carries ReadAt. A socket path taken
// over by another ptp4l since the previous Status fails this one with
// [ErrReplaced]; the next reads the new daemon.
func (p *PTP4L) Status(ctx context.Context) (Status, error) {
	if p.closed.Load() {
		return Status{ReadAt: time.Now()}, ErrClosed
	}
	st, err := p.read(ctx)
	st.ReadAt = time.Now()
	if err != nil {
		return st, explain(p.path, err)
	}
	return st, nil
}

func (p *PTP4L) read(ctx context.Context) (Status, error) {
	var st Status
	pp, err := p.client.PortPropertiesNP(ctx)
	if err != nil {
		return st, err
	}
	st.PortState = PortState(pp.PortState)
	st.Interface = string(pp.Interface)
	st.ClockIdentity = ClockIdentity(pp.PortIdentity.ClockIdentity)
	cur, err := p.client.CurrentDataSet(ctx)
	if err != nil {
		return st, err
	}
	st.StepsRemoved = cur.StepsRemoved
	st.MeanPathDelay = time.Duration(math.Round(cur.MeanPathDelay.Nanoseconds()))
	// offsetFromMaster is master_offset in scaled ns (×2^16): exact.
	st.CurrentOffset = time.Duration(math.Round(cur.OffsetFromMaster.Nanoseconds()))
	par, err := p.client.ParentDataSet(ctx)
	if err != nil {
		return st, err
	}
	st.ParentPort = par.ParentPortIdentity.String()
	ts, err := p.client.TimeStatusNP(ctx)
	if err != nil {
		return st, err
	}
	st.Offset = time.Duration(ts.MasterOffsetNS)
	st.GMIdentity = ClockIdentity(ts.GMIdentity)
	st.GMPresent = ts.GMPresent != 0
	// ptp4l stamps ingress with the port's timestamping clock: CLOCK_REALTIME
	// for software timestamping, the PHC for hardware.
	tsClock := Realtime
	if pp.Timestamping != 0 {
		tsClock = PHC
	}
	st.LastSyncIngress = Stamp{Ns: ts.IngressTimeNS, Clock: tsClock}
	st.GMQuality = ClockQuality{Class: uint8(par.GrandmasterClockQuality.ClockClass),
		Accuracy: uint8(par.GrandmasterClockQuality.ClockAccuracy), Variance: par.GrandmasterClockQuality.OffsetScaledLogVariance}
	st.PortEvents = p.portEvents(ctx)
	p.readPHC(&st)
	return st, nil
}

// portEvents returns the port-state changes ptp4l pushed since the
// previous reading, subscribing first when the client's connection is new
// (first reading, or a reconnect to a restarted or another ptp4l). A
// ptp4l that does not support the subscription (or does not answer it)
// is read by polls alone; the note says why. Blocks for one request when
// it subscribes.
func (p *PTP4L) portEvents(ctx context.Context) PortEvents {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	gen := p.client.Generation()
	if p.sub != nil && p.subGen != gen {
		_ = p.sub.Close()
		p.sub = nil
	}
	if p.sub == nil && p.subGen != gen {
		p.subGen = gen
		sub, err := pmc.Subscribe(p.path, p.timeout)
		if err != nil {
			p.subNote = "no port-state subscription: " + err.Error()
			return PortEvents{Note: p.subNote}
		}
		// Nothing is known of the time before the subscription: the
		// first reading after it covers only from now.
		p.sub, p.subNote = sub, ""
		_ = sub.Take(ctx)
		return PortEvents{Subscribed: true}
	}
	if p.sub == nil {
		return PortEvents{Note: p.subNote}
	}
	ev := p.sub.Take(ctx)
	out := PortEvents{Subscribed: ev.Alive, Changes: ev.Changes, Lost: ev.Lost}
	if ev.Changes > 0 {
		out.First = PortState(ev.States[0])
	}
	if !ev.Alive {
		out.Note = fmt.Sprintf("port-state subscription ended: %v", ev.Err)
	}
	return out
}

func (p *PTP4L) readPHC(st *Status) {
	if p.phcMode == "off" {
		st.PHCNote = "PHC reading disabled"
		return
	}
	p.phcMu.Lock()
	if p.phcIface != st.Interface {
		p.phcIface = st.Interface
		p.phcDev, p.phcNote = "", ""
		dev, err := phc.Device(st.Interface)
		if err != nil {
			p.phcNote = err.Error()
		} else {
			p.phcDev = dev
		}
	}
	dev, note := p.phcDev, p.phcNote
	p.phcMu.Unlock()
	if dev == "" {
		st.PHCNote = note
		return
	}
	off, err := phc.SysOffset(dev)
	if err != nil {
		st.PHCNote = err.Error()
		return
	}
	st.HasPHC, st.PHCDevice = true, dev
	st.PHCSysOffset, st.PHCSysDelay = off.Offset, off.Delay
}

// SetSynchronizationUncertain sends SET SYNCHRONIZATION_UNCERTAIN_NP.
// A ptp4l with free_running 1 keeps its slave port UNCALIBRATED until this
// is set to false after each start. Blocks for one request.
func (p *PTP4L) SetSynchronizationUncertain(ctx context.Context, uncertain bool) error {
	if p.closed.Load() {
		return ErrClosed
	}
	var v uint8
	if uncertain {
		v = 1
	}
	got, err := p.client.SetSynchronizationUncertain(ctx, v)
	if err != nil {
		return explain(p.path, err)
	}
	if got != v {
		return fmt.Errorf("timesync: %s: SET SYNCHRONIZATION_UNCERTAIN_NP %d answered %d", p.path, v, got)
	}
	return nil
}

// Close releases the client socket. Idempotent; ErrClosed the second time.
func (p *PTP4L) Close() error {
	if p.closed.Swap(true) {
		return ErrClosed
	}
	p.subMu.Lock()
	if p.sub != nil {
		_ = p.sub.Close()
		p.sub = nil
	}
	p.subMu.Unlock()
	return p.client.Close()
}
