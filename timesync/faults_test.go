package timesync_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/internal/pmcsim"
)

// Fault modes played by the fake ptp4l management socket (pmcsim), each
// polled through the real reader (DialPTP4L) and judged by a Tracker, as
// the Monitor and `hilrig ptp watch` do. Polls follow one another with
// no wait: the fake measures anew at every reading.

// fakePTP4L binds a fake ptp4l in a test directory and closes it at the
// end of the test.
func fakePTP4L(t *testing.T, path string, st pmcsim.State) *pmcsim.Server {
	t.Helper()
	s, err := pmcsim.Start(path, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dialFake(t *testing.T, path string) *timesync.PTP4L {
	t.Helper()
	src, err := timesync.DialPTP4L(context.Background(), path, &timesync.PTP4LOptions{RequestTimeout: 2 * time.Second, PHC: "off"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// poll reads src once and judges it.
type poller struct {
	t   *testing.T
	src timesync.Source
	tr  *timesync.Tracker
	log []string
}

func newPoller(t *testing.T, src timesync.Source, policy *timesync.LockPolicy) *poller {
	return &poller{t: t, src: src, tr: timesync.NewTracker(0, 0, policy)}
}

func (p *poller) poll() (timesync.Status, timesync.Verdict, error) {
	st, err := p.src.Status(context.Background())
	v := p.tr.Observe(st, err)
	p.log = append(p.log, fmt.Sprintf("poll %d: clock %s state %s class %d delay %v events %+v: %s %s (err %v)",
		len(p.log), st.ClockIdentity, st.PortState, st.GMQuality.Class, st.MeanPathDelay, st.PortEvents, v.Cond, v.Detail, err))
	return st, v, err
}

func (p *poller) dump() string { return strings.Join(p.log, "\n") }

// fakeBoard binds a fake ptp4l in st, dials it and returns it with a
// poller judging it on policy.
func fakeBoard(t *testing.T, st pmcsim.State, policy *timesync.LockPolicy) (*pmcsim.Server, *poller) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	srv := fakePTP4L(t, path, st)
	return srv, newPoller(t, dialFake(t, path), policy)
}

// TestPTP4LSecondInstanceOnSamePath: a second ptp4l binds the path a
// reader is connected to. The reader must follow the path (drop one
// reading, then read the new daemon), not go on reading the old one
// while every new reader sees the new one; and the new clock must earn
// its lock with fresh offsets.
func TestPTP4LSecondInstanceOnSamePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	first := pmcsim.Locked()
	fakePTP4L(t, path, first)
	p := newPoller(t, dialFake(t, path), nil)
	locked := 0
	for range 5 {
		if _, v, _ := p.poll(); v.Locked {
			locked++
		}
	}
	if locked == 0 {
		t.Fatalf("never locked on the first instance:\n%s", p.dump())
	}
	second := pmcsim.Locked()
	second.ClockIdentity = 0x02000afffee900aa
	fakePTP4L(t, path, second) // the old one keeps running, unreachable by path
	_, v, err := p.poll()
	if !errors.Is(err, timesync.ErrReplaced) || v.Locked || !strings.Contains(err.Error(), path) {
		t.Fatalf("first poll after the path was taken over: err %v, verdict %+v; want ErrReplaced naming %s\n%s", err, v, path, p.dump())
	}
	for i := range 17 {
		st, v, err := p.poll()
		if err != nil {
			t.Fatalf("poll %d after the takeover: %v\n%s", i, err, p.dump())
		}
		if st.ClockIdentity != timesync.ClockIdentity(second.ClockIdentity) {
			t.Fatalf("poll %d after the takeover read clock %s, the old instance; want the new one %s\n%s",
				i, st.ClockIdentity, timesync.ClockIdentity(second.ClockIdentity), p.dump())
		}
		// The new clock: first a change, then the fresh offsets.
		if i <= timesync.FreshMeasurements && v.Locked {
			t.Errorf("poll %d after the takeover locked before %d fresh offsets from the new clock\n%s", i, timesync.FreshMeasurements, p.dump())
		}
		if i == 0 && v.Cond != timesync.CondClockChanged {
			t.Errorf("first reading of the new clock: %s, want clock-changed", v.Cond)
		}
		if i > timesync.FreshMeasurements+1 && !v.Locked {
			t.Errorf("poll %d: the new instance never locks: %s %s", i, v.Cond, v.Detail)
		}
	}
	t.Logf("\n%s", p.dump())
}

// TestPTP4LClockIdentityChangeIsNotLocked: a socket whose answering
// clock changes identity every 5 polls. Each change is a loss of lock
// until fresh offsets from the new clock (it used to stay locked on 18 of
// 20 polls).
func TestPTP4LClockIdentityChangeIsNotLocked(t *testing.T) {
	srv, p := fakeBoard(t, pmcsim.Locked(), nil)
	locked := 0
	for i := range 20 {
		if i > 0 && i%5 == 0 {
			srv.Update(func(s *pmcsim.State) { s.ClockIdentity++ })
		}
		_, v, _ := p.poll()
		if v.Locked {
			locked++
		}
		if k := i % 5; i >= 5 && k <= timesync.FreshMeasurements && v.Locked {
			t.Errorf("poll %d (%d after the clock identity changed) locked", i, k)
		}
		if i >= 5 && i%5 == 0 && v.Cond != timesync.CondClockChanged {
			t.Errorf("poll %d (clock identity changed): %s, want clock-changed", i, v.Cond)
		}
	}
	t.Logf("%d of 20 polls locked\n%s", locked, p.dump())
}

// TestPTP4LPortFlapBetweenPolls: the port leaves SLAVE and comes back
// between two polls (every second poll). ptp4l pushes the changes to
// the reader's subscription, so the poll after each flap is not locked,
// though it reads SLAVE.
func TestPTP4LPortFlapBetweenPolls(t *testing.T) {
	srv, p := fakeBoard(t, pmcsim.Locked(), nil)
	locked := 0
	for i := range 32 {
		flapped := i >= 4 && i%2 == 0
		if flapped {
			srv.Update(func(s *pmcsim.State) { s.PortState = pmcsim.Listening })
			srv.Update(func(s *pmcsim.State) { s.PortState = pmcsim.Uncalibrated })
			srv.Update(func(s *pmcsim.State) { s.PortState = pmcsim.Slave })
		}
		st, v, err := p.poll()
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if !st.PortEvents.Subscribed {
			t.Fatalf("poll %d: no port-state subscription: %s", i, st.PortEvents.Note)
		}
		if v.Locked {
			locked++
		}
		if flapped && (v.Locked || v.Cond != timesync.CondPortFlapped || st.PortEvents.Changes != 3 || st.PortEvents.First != timesync.PortStateListening) {
			t.Errorf("poll %d after a flap SLAVE→LISTENING→UNCALIBRATED→SLAVE: verdict %s (%s), events %+v; want port-flapped with 3 changes, first LISTENING",
				i, v.Cond, v.Detail, st.PortEvents)
		}
	}
	if locked == 0 {
		t.Errorf("never locked between flaps")
	}
	if srv.Subscribers() != 1 {
		t.Errorf("fake holds %d subscriptions, want 1", srv.Subscribers())
	}
	t.Logf("%d of 32 polls locked, %d notifications\n%s", locked, srv.Notifications(), p.dump())
}

// TestPTP4LSubscriptionLostIsNotLocked: ptp4l forgets the subscription
// (it would after a restart that kept the socket): the next poll cannot
// vouch that the port stayed SLAVE, and the reader subscribes again.
func TestPTP4LSubscriptionLostIsNotLocked(t *testing.T) {
	srv, p := fakeBoard(t, pmcsim.Locked(), nil)
	for range 4 {
		p.poll()
	}
	srv.DropSubscribers()
	if st, v, _ := p.poll(); v.Locked || st.PortEvents.Lost == 0 {
		t.Fatalf("poll after ptp4l dropped the subscription: %s, events %+v; want not locked, lost > 0\n%s", v.Cond, st.PortEvents, p.dump())
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Subscribers() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the reader never subscribed again\n%s", p.dump())
		}
		p.poll()
	}
}

// TestPTP4LWithoutSubscriptionSupport: a ptp4l that refuses the
// subscription is still read, by polls alone, and says so.
func TestPTP4LWithoutSubscriptionSupport(t *testing.T) {
	st := pmcsim.Locked()
	st.NoSubscribe = true
	_, p := fakeBoard(t, st, nil)
	var last timesync.Verdict
	var s timesync.Status
	for range 5 {
		s, last, _ = p.poll()
	}
	if !last.Locked || s.PortEvents.Subscribed || !strings.Contains(s.PortEvents.Note, "SUBSCRIBE_EVENTS_NP") {
		t.Errorf("old ptp4l: verdict %+v, events %+v; want locked by polls, no subscription and a note why\n%s", last, s.PortEvents, p.dump())
	}
}

// TestPTP4LGMClassCyclingIsNotLocked: the grandmaster's clockClass
// cycles 6 → 7 → 52 → 187 → 248 → 255, four polls each, on a rack that
// accepts 6 and 7 (a GPS-locked grandmaster). Only accepted classes may
// lock, and a change is a loss of lock until fresh offsets follow (it
// used to be locked on 22 of 24 polls).
func TestPTP4LGMClassCyclingIsNotLocked(t *testing.T) {
	srv, p := fakeBoard(t, pmcsim.Locked(), &timesync.LockPolicy{GMClasses: []uint8{6, 7}})
	classes := []uint8{6, 7, 52, 187, 248, 255}
	locked := 0
	for i := range 24 {
		c := classes[i/4]
		if i%4 == 0 {
			srv.Update(func(s *pmcsim.State) { s.GMClockClass = c })
		}
		_, v, _ := p.poll()
		if v.Locked {
			locked++
		}
		switch {
		case c != 6 && c != 7 && (v.Locked || v.Cond != timesync.CondGMClassRefused):
			t.Errorf("poll %d, clockClass %d: %s, want gm-class-refused", i, c, v.Cond)
		case c == 7 && i%4 == 0 && v.Cond != timesync.CondGMQualityChanged:
			t.Errorf("poll %d, clockClass 6 → 7: %s, want gm-quality-changed", i, v.Cond)
		case c == 7 && i%4 <= 1 && v.Locked:
			t.Errorf("poll %d, %d after clockClass 6 → 7: locked before fresh offsets", i, i%4)
		}
	}
	if locked == 0 {
		t.Error("never locked while the class was accepted")
	}
	t.Logf("%d of 24 polls locked\n%s", locked, p.dump())
	// The sim rack's free-running grandmaster reports 248: accepted
	// where the rack says so, and 255 never, whatever the rack says.
	srv.Update(func(s *pmcsim.State) { s.GMClockClass = 248 })
	p248 := newPoller(t, p.src, &timesync.LockPolicy{GMClasses: []uint8{248}})
	var v timesync.Verdict
	for range 4 {
		_, v, _ = p248.poll()
	}
	if !v.Locked {
		t.Errorf("clockClass 248 on a rack accepting 248: %s %s", v.Cond, v.Detail)
	}
	srv.Update(func(s *pmcsim.State) { s.GMClockClass = 255 })
	pAny := newPoller(t, p.src, nil)
	for i := range 4 {
		if _, v, _ := pAny.poll(); v.Locked || (i > 0 && v.Cond != timesync.CondGMClassRefused) {
			t.Errorf("clockClass 255 with no class list: %s, want gm-class-refused", v.Cond)
		}
	}
	if err := (&timesync.LockPolicy{GMClasses: []uint8{248, 255}}).Validate(); !errors.Is(err, timesync.ErrBadConfig) {
		t.Errorf("a policy accepting 255: %v, want ErrBadConfig", err)
	}
}

// TestPTP4LPathDelayOutOfBoundIsNotLocked: a negative mean path delay
// (−2.3 µs) is no distance (it used to be locked on 10 of 12 polls); one
// above the rack's bound is no LAN.
func TestPTP4LPathDelayOutOfBoundIsNotLocked(t *testing.T) {
	st := pmcsim.Locked()
	st.MeanPathDelay = -2300 * time.Nanosecond
	srv, p := fakeBoard(t, st, nil)
	src := p.src
	locked := 0
	for i := range 12 {
		_, v, _ := p.poll()
		if v.Locked {
			locked++
		}
		if v.Locked || (i > 0 && v.Cond != timesync.CondPathDelayOutOfBound) {
			t.Errorf("poll %d, mean path delay −2.3µs: %s, want path-delay-out-of-bound", i, v.Cond)
		}
	}
	t.Logf("mean path delay −2.3µs: %d of 12 polls locked", locked)
	srv.Update(func(s *pmcsim.State) { s.MeanPathDelay = 50 * time.Microsecond })
	p = newPoller(t, src, &timesync.LockPolicy{MaxPathDelay: 10 * time.Microsecond})
	for i := range 6 {
		if _, v, _ := p.poll(); v.Locked || (i > 0 && v.Cond != timesync.CondPathDelayOutOfBound) {
			t.Errorf("poll %d, mean path delay 50µs, bound 10µs: %s, want path-delay-out-of-bound", i, v.Cond)
		}
	}
	srv.Update(func(s *pmcsim.State) { s.MeanPathDelay = 5 * time.Microsecond })
	var v timesync.Verdict
	for range 4 {
		_, v, _ = p.poll()
	}
	if !v.Locked {
		t.Errorf("mean path delay 5µs within 10µs: %s %s", v.Cond, v.Detail)
	}
	t.Logf("\n%s", p.dump())
}
