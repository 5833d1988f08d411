package timesync_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
)

func TestClockText(t *testing.T) {
	for _, c := range []timesync.Clock{timesync.Monotonic, timesync.Realtime, timesync.TAI, timesync.PHC} {
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got timesync.Clock
		if err := got.UnmarshalText(b); err != nil || got != c {
			t.Errorf("%s: round trip gave %v, %v", c, got, err)
		}
	}
	var c timesync.Clock
	if err := c.UnmarshalText([]byte("CLOCK_TAI")); err != nil || c != timesync.TAI {
		t.Errorf("CLOCK_TAI → %v, %v", c, err)
	}
	if err := c.UnmarshalText([]byte("sundial")); err == nil {
		t.Error("unknown clock name accepted")
	}
	if _, err := timesync.ClockUnknown.MarshalText(); err == nil {
		t.Error("ClockUnknown marshalled")
	}
	if timesync.Monotonic.CrossHost() || !timesync.Realtime.CrossHost() {
		t.Error("CrossHost wrong")
	}
}

func TestStampSubRefusesMixedClocks(t *testing.T) {
	a := timesync.Stamp{Ns: 10, Clock: timesync.Monotonic}
	b := timesync.Stamp{Ns: 4, Clock: timesync.Realtime}
	if _, err := a.Sub(b); err == nil {
		t.Error("monotonic − realtime accepted")
	}
	d, err := a.Sub(timesync.Stamp{Ns: 4, Clock: timesync.Monotonic})
	if err != nil || d != 6 {
		t.Errorf("Sub = %v, %v; want 6ns", d, err)
	}
}

func TestStamperReadsTheNamedClock(t *testing.T) {
	for _, c := range []timesync.Clock{timesync.Monotonic, timesync.Realtime, timesync.TAI} {
		s, err := timesync.NewStamper(c)
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Now()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.Now()
		if a.Clock != c || b.Ns < a.Ns {
			t.Errorf("%s: stamps %v then %v", c, a, b)
		}
		wall := time.Now().UnixNano()
		switch c {
		case timesync.Realtime:
			if d := wall - b.Ns; d < 0 || d > int64(time.Second) {
				t.Errorf("realtime %d vs time.Now %d", b.Ns, wall)
			}
		case timesync.TAI:
			// TAI = UTC + the kernel's TAI offset (0 when nothing set it, 37 s today).
			if d := b.Ns - wall; d < -int64(time.Second) || d > 40*int64(time.Second) {
				t.Errorf("tai − realtime = %v", time.Duration(d))
			}
		}
	}
	if _, err := timesync.NewStamper(timesync.PHC); err == nil {
		t.Error("NewStamper(PHC) without a device accepted")
	}
	if _, err := timesync.NewStamper(timesync.Clock(99)); err == nil {
		t.Error("NewStamper(99) accepted")
	}
}

// TestStamperNowAllocatesNothing: Now is on the message hot path.
func TestStamperNowAllocatesNothing(t *testing.T) {
	for _, c := range []timesync.Clock{timesync.Monotonic, timesync.Realtime, timesync.TAI} {
		s, _ := timesync.NewStamper(c)
		if n := testing.AllocsPerRun(1000, func() { _, _ = s.Now() }); n != 0 {
			t.Errorf("%s: %v allocs per Now, want 0", c, n)
		}
	}
}

// BenchmarkStamperNow reports each clock's read cost next to the
// time.Now baseline measured in the same run (compare ratios, not ns).
func BenchmarkStamperNow(b *testing.B) {
	b.Run("clock=baseline-time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for b.Loop() {
			sink += time.Now().UnixNano()
		}
		_ = sink
	})
	for _, c := range []timesync.Clock{timesync.Monotonic, timesync.Realtime, timesync.TAI} {
		s, _ := timesync.NewStamper(c)
		b.Run("clock="+c.String(), func(b *testing.B) {
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				st, _ := s.Now()
				sink += st.Ns
			}
			_ = sink
		})
	}
}

func TestPortStateAndIdentityText(t *testing.T) {
	var ps timesync.PortState
	if err := ps.UnmarshalText([]byte("slave")); err != nil || ps != timesync.PortStateSlave {
		t.Errorf("slave → %v, %v", ps, err)
	}
	if err := ps.UnmarshalText([]byte("BOSS")); err == nil {
		t.Error("unknown port state accepted")
	}
	id, err := timesync.ClockIdentityFromMAC("02:00:0a:e9:00:01")
	if err != nil || id.String() != "02000a.fffe.e90001" {
		t.Errorf("from MAC: %v, %v", id, err)
	}
	back, err := timesync.ParseClockIdentity(id.String())
	if err != nil || back != id {
		t.Errorf("parse %s: %v, %v", id, back, err)
	}
	for _, bad := range []string{"", "02000a.fffe", "zz000a.fffe.e90001"} {
		if _, err := timesync.ParseClockIdentity(bad); err == nil {
			t.Errorf("ParseClockIdentity(%q) accepted", bad)
		}
	}
	if _, err := timesync.ClockIdentityFromMAC("02:00"); err == nil {
		t.Error("short MAC accepted")
	}
	var c timesync.Condition
	if err := c.UnmarshalText([]byte("ingress-stale")); err != nil || c != timesync.CondIngressStale {
		t.Errorf("condition: %v %v", c, err)
	}
}

func FuzzParseClockIdentity(f *testing.F) {
	f.Add("02000a.fffe.e90001")
	f.Add("ffffffffffffffff")
	f.Add("..")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := timesync.ParseClockIdentity(s)
		if err != nil {
			return
		}
		back, err := timesync.ParseClockIdentity(id.String())
		if err != nil || back != id {
			t.Fatalf("%q → %v → %v, %v", s, id, back, err)
		}
	})
}
