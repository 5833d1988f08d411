package pmc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// Management ids and event numbers of ptp4l's event subscription
// (linuxptp tlv.h, notification.h); facebook/time defines neither.
const (
	// IDSubscribeEventsNP is MID_SUBSCRIBE_EVENTS_NP.
	IDSubscribeEventsNP protocol.ManagementID = 0xC003
	// notifyPortState is NOTIFY_PORT_STATE: ptp4l sends a PORT_DATA_SET
	// (IEEE 1588 portDS) to the subscriber at every port state change.
	notifyPortState = 0
	// eventBitmaskLen is EVENT_BITMASK_CNT: the subscription's bitmask is
	// 64 octets (one bit per event), after a 16-bit duration in seconds.
	eventBitmaskLen = 64
)

// SubscribeEventsTLV is SUBSCRIBE_EVENTS_NP's data field (linuxptp struct
// subscribe_events_np): duration in seconds, then the event bitmask.
type SubscribeEventsTLV struct {
	protocol.ManagementTLVHead
	Duration uint16
	Bitmask  [eventBitmaskLen]byte
}

// Offsets into a management message (IEEE 1588-2019 Table 35 header, 34
// octets, then Table 56: targetPortIdentity 10, startingBoundaryHops,
// boundaryHops, actionField, reserved), then the TLV: type, length,
// managementId, data.
const (
	offSequence = 30
	offAction   = 46
	offTLVType  = 48
	offMgmtID   = 52
	offData     = 54
)

// SubscriptionDuration is how long one SUBSCRIBE_EVENTS_NP lasts in
// ptp4l; the Subscription renews it every third of that. Short on
// purpose: ptp4l writes notifications with a blocking sendto, so a
// subscriber that stops reading (a stopped process) with more than
// net.unix.max_dgram_qlen (10) notifications queued would stall ptp4l
// until it reads again or the socket closes; a short subscription
// bounds how long ptp4l keeps sending to a reader that is gone quiet.
const SubscriptionDuration = 30 * time.Second

// PortEvents is what ptp4l pushed about its port between two calls of
// [Subscription.Take].
type PortEvents struct {
	// Changes counts port-state notifications (PORT_DATA_SET) received.
	Changes uint32
	// States holds the first port states notified, in order (up to
	// len(States); Changes says how many there were).
	States [4]uint8
	// Lost counts notifications that went missing: gaps in ptp4l's
	// per-subscriber sequence ids, or renewals ptp4l did not acknowledge
	// (the subscription may have lapsed).
	Lost uint32
	// Alive is false once the subscription's socket failed (ptp4l went
	// away): then nothing more will arrive and Err says why.
	Alive bool
	Err   error
}

// Subscription is one SUBSCRIBE_EVENTS_NP (NOTIFY_PORT_STATE) to a ptp4l,
// on a socket of its own that a goroutine reads all the time: ptp4l
// sends notifications with a blocking write, so a socket read only at
// polls (the request socket) would stall ptp4l once 10 were queued. The
// goroutine renews the subscription every [SubscriptionDuration]/3. Safe
// for concurrent use.
type Subscription struct {
	remote  string
	dir     string
	conn    *net.UnixConn
	timeout time.Duration
	// src is this subscriber's sourcePortIdentity: ptp4l keys its
	// subscribers by it, so two subscriptions from one process (two
	// readers of one ptp4l) must not share facebook/time's per-process
	// default, or the second would steal the first one's notifications.
	src  protocol.PortIdentity
	done chan struct{}

	// takeMu serialises Take: one barrier in flight.
	takeMu    sync.Mutex
	closeOnce sync.Once

	mu       sync.Mutex
	seq      uint16 // last sequence id used
	setSeq   uint16 // of the last SET (subscribe or renewal)
	ev       PortEvents
	notified bool   // a notification was seen (nextSeq is valid)
	nextSeq  uint16 // ptp4l's sequence id expected next
	acked    bool   // the last SET was acknowledged
	// barrier is the pending Take's GET: its sequence id and the channel
	// the reader closes (after setting barrierErr) once ptp4l answered it.
	barrierSeq uint16
	barrier    chan struct{}
	barrierErr error
	renewNow   bool // the barrier found the subscription gone: renew at once
}

// Subscribe subscribes to port-state notifications of the ptp4l at
// remote and waits (up to timeout, 0 → 1 s) for ptp4l's acknowledgement.
// It fails with [ErrManagementError] when ptp4l does not support the
// subscription, [ErrTimeout] when nothing answers. Blocks.
func Subscribe(remote string, timeout time.Duration) (*Subscription, error) {
	if timeout <= 0 {
		timeout = time.Second
	}
	dir, err := os.MkdirTemp("", "hilrig-pmcsub-")
	if err != nil {
		return nil, fmt.Errorf("make subscription socket dir: %w", err)
	}
	conn, err := net.DialUnix("unixgram",
		&net.UnixAddr{Name: filepath.Join(dir, "s.sock"), Net: "unixgram"},
		&net.UnixAddr{Name: remote, Net: "unixgram"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, classify(remote, err)
	}
	s := &Subscription{remote: remote, dir: dir, conn: conn, timeout: timeout, done: make(chan struct{}),
		src: protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(rand.Uint64()), PortNumber: uint16(os.Getpid())}}
	if err := s.subscribeSync(); err != nil {
		s.closeSocket()
		return nil, err
	}
	s.ev.Alive = true
	go s.run()
	return s, nil
}

func (s *Subscription) closeSocket() {
	_ = s.conn.Close()
	_ = os.RemoveAll(s.dir)
}

// request encodes SUBSCRIBE_EVENTS_NP with action (SET, or GET to ask
// what ptp4l holds) and sequence id seq; a SET with subscribe false
// (duration 0, empty bitmask) unsubscribes.
func (s *Subscription) request(action protocol.Action, seq uint16, subscribe bool) ([]byte, error) {
	const tlvLen = 2 + 2 + eventBitmaskLen // managementId, duration, bitmask
	tlv := &SubscribeEventsTLV{ManagementTLVHead: protocol.ManagementTLVHead{
		TLVHead:      protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: tlvLen},
		ManagementID: IDSubscribeEventsNP,
	}}
	if subscribe {
		tlv.Duration = uint16(SubscriptionDuration / time.Second)
		tlv.Bitmask[notifyPortState/8] |= 1 << (notifyPortState % 8)
	}
	m := &protocol.Management{
		ManagementMsgHead: protocol.ManagementMsgHead{
			Header: protocol.Header{
				SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(protocol.MessageManagement, 0),
				Version:            protocol.Version,
				MessageLength:      offTLVType + 4 + tlvLen,
				SourcePortIdentity: s.src,
				SequenceID:         seq,
				LogMessageInterval: protocol.MgmtLogMessageInterval,
			},
			TargetPortIdentity: protocol.DefaultTargetPortIdentity,
			ActionField:        action,
		},
		TLV: tlv,
	}
	return m.MarshalBinary()
}

// nextSet allocates the sequence id of a SET.
func (s *Subscription) nextSet() uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.setSeq, s.acked = s.seq, false
	return s.seq
}

// subscribeSync sends the first SET and reads until its answer.
func (s *Subscription) subscribeSync() error {
	b, err := s.request(protocol.SET, s.nextSet(), true)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.timeout)
	if err := s.conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := s.conn.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w on %s: SET SUBSCRIBE_EVENTS_NP not accepted within %v", ErrTimeout, s.remote, s.timeout)
		}
		return classify(s.remote, err)
	}
	buf := make([]byte, 1500)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("%w on %s to SET SUBSCRIBE_EVENTS_NP within %v", ErrTimeout, s.remote, s.timeout)
			}
			return classify(s.remote, err)
		}
		if done, err := s.handle(buf[:n]); done {
			return err
		}
	}
}

// handle takes one datagram: a notification is counted; the answer to
// the last SET returns done (with the error ptp4l answered, if any); the
// answer to a Take's GET releases that Take.
func (s *Subscription) handle(b []byte) (done bool, err error) {
	if len(b) < offData || b[0]&0x0f != uint8(protocol.MessageManagement) {
		return false, nil
	}
	seq := binary.BigEndian.Uint16(b[offSequence:])
	tlvType := protocol.TLVType(binary.BigEndian.Uint16(b[offTLVType:]))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case tlvType == protocol.TLVManagementErrorStatus:
		// Error status data: managementErrorId, then managementId.
		if len(b) < offMgmtID+4 || protocol.ManagementID(binary.BigEndian.Uint16(b[offMgmtID+2:])) != IDSubscribeEventsNP {
			return false, nil
		}
		code := protocol.ManagementErrorID(binary.BigEndian.Uint16(b[offMgmtID:]))
		err := fmt.Errorf("%w: %s answered SUBSCRIBE_EVENTS_NP with %s (ptp4l too old for event subscription?)", ErrManagementError, s.remote, code)
		if s.barrier != nil && seq == s.barrierSeq {
			s.releaseLocked(err)
			return false, nil
		}
		return seq == s.setSeq, err
	case tlvType != protocol.TLVManagement || protocol.Action(b[offAction]&0x0f) != protocol.RESPONSE:
		return false, nil
	}
	switch protocol.ManagementID(binary.BigEndian.Uint16(b[offMgmtID:])) {
	case IDSubscribeEventsNP:
		// Data: duration (seconds left), then the bitmask ptp4l holds.
		subscribed := len(b) >= offData+3 && binary.BigEndian.Uint16(b[offData:]) > 0 &&
			b[offData+2+notifyPortState/8]&(1<<(notifyPortState%8)) != 0
		switch {
		case s.barrier != nil && seq == s.barrierSeq:
			if !subscribed {
				// ptp4l dropped us (it restarted, or the subscription
				// lapsed): whatever it notified meanwhile is lost.
				s.ev.Lost++
				s.renewNow = true
			}
			s.releaseLocked(nil)
		case seq == s.setSeq:
			s.acked = true
			return true, nil
		}
	case protocol.IDPortDataSet:
		// portDS: portIdentity (10 octets), then portState.
		if len(b) < offData+11 {
			return false, nil
		}
		if s.notified && seq != s.nextSeq {
			s.ev.Lost += uint32(seq - s.nextSeq)
		}
		s.notified, s.nextSeq = true, seq+1
		if int(s.ev.Changes) < len(s.ev.States) {
			s.ev.States[s.ev.Changes] = b[offData+10]
		}
		s.ev.Changes++
	}
	return false, nil
}

func (s *Subscription) releaseLocked(err error) {
	s.barrierErr = err
	close(s.barrier)
	s.barrier = nil
}

// run reads notifications until the socket fails or is closed, renewing
// the subscription every third of its duration.
func (s *Subscription) run() {
	defer close(s.done)
	buf := make([]byte, 1500)
	renew := time.Now().Add(SubscriptionDuration / 3)
	for {
		_ = s.conn.SetReadDeadline(renew)
		n, err := s.conn.Read(buf)
		if err == nil {
			_, _ = s.handle(buf[:n])
			s.mu.Lock()
			if s.renewNow {
				s.renewNow = false
				renew = time.Now() // renew at the next read
			}
			s.mu.Unlock()
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			s.fail(err)
			return
		}
		s.mu.Lock()
		if !s.acked {
			// ptp4l did not answer the last renewal: the
			// subscription may have lapsed and notifications with it.
			s.ev.Lost++
		}
		s.mu.Unlock()
		b, err := s.request(protocol.SET, s.nextSet(), true)
		if err == nil {
			_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
			_, err = s.conn.Write(b)
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			s.fail(err)
			return
		}
		renew = time.Now().Add(SubscriptionDuration / 3)
	}
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.barrier != nil {
		s.releaseLocked(err)
	}
	if s.ev.Alive {
		s.ev.Alive = false
		if errors.Is(err, net.ErrClosed) {
			s.ev.Err = ErrClosed
		} else {
			s.ev.Err = fmt.Errorf("port-state subscription: %w", classify(s.remote, err))
		}
	}
}

// Take returns the events since the previous Take (or Subscribe) and
// starts counting anew. It first asks ptp4l what it holds for this
// subscriber (GET SUBSCRIBE_EVENTS_NP) and waits for the answer: ptp4l
// answers in order, so every notification it sent before is counted by
// then, and a subscription ptp4l no longer holds is seen (counted as
// Lost; the reader renews it). Blocks up to the timeout given to
// Subscribe, or until ctx ends; on either the events so far are returned
// with Lost raised, since the barrier did not complete.
func (s *Subscription) Take(ctx context.Context) PortEvents {
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	s.mu.Lock()
	alive := s.ev.Alive
	var wait chan struct{}
	var seq uint16
	if alive {
		s.seq++
		seq = s.seq
		wait = make(chan struct{})
		s.barrier, s.barrierSeq, s.barrierErr = wait, seq, nil
	}
	s.mu.Unlock()
	complete := false
	if alive {
		b, err := s.request(protocol.GET, seq, true)
		if err == nil {
			_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
			_, err = s.conn.Write(b)
		}
		if err == nil {
			t := time.NewTimer(s.timeout)
			select {
			case <-wait:
				complete = true
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.barrier == wait && wait != nil {
		s.barrier = nil
	}
	if complete && s.barrierErr != nil {
		complete = false
	}
	ev := s.ev
	if alive && !complete {
		// Notifications sent before now may still be on their way.
		ev.Lost++
	}
	s.ev = PortEvents{Alive: ev.Alive, Err: ev.Err}
	return ev
}

// Close unsubscribes (best effort, without waiting for the answer),
// closes the socket and waits for the reader goroutine. Idempotent.
func (s *Subscription) Close() error {
	s.closeOnce.Do(func() {
		select {
		case <-s.done:
			// The socket already failed: nobody to unsubscribe from.
		default:
			b, err := s.request(protocol.SET, s.nextSet(), false)
			if err == nil {
				_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
				_, _ = s.conn.Write(b)
			}
		}
		s.closeSocket()
		<-s.done
	})
	return nil
}
