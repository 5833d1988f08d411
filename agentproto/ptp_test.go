package agentproto_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/timesync"
)

func lockedSample() agentproto.PTPSample {
	st := timesync.Status{
		ReadAt: time.Unix(1767225600, 123456789), ClockIdentity: 0x02000afffee90002, Interface: "veth1",
		PortState: timesync.PortStateSlave, Offset: -312, CurrentOffset: -312, MeanPathDelay: 4100 * time.Nanosecond, StepsRemoved: 1,
		GMIdentity: 0x02000afffee90001, GMPresent: true, GMQuality: timesync.ClockQuality{Class: 248, Accuracy: 0xfe, Variance: 0xffff},
		PortEvents: timesync.PortEvents{Subscribed: true, Changes: 2, First: timesync.PortStateListening, Lost: 1}, LastSyncIngress: timesync.Stamp{Ns: 1767225600100000000, Clock: timesync.Realtime},
		PHCNote: "veth1 has no PHC",
	}
	return agentproto.PTPSampleOf("ptp1", 7, st)
}

// TestPTPRoundTrip: a probe start, a stop, a reading, a failed poll and
// an end survive encode/decode, and a reading converts back to the exact
// timesync.Status it was made from.
func TestPTPRoundTrip(t *testing.T) {
	s := lockedSample()
	msgs := []*agentproto.Msg{
		agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "ptp1", Socket: "/var/run/ptp4l", PeriodNs: int64(time.Second)}),
		agentproto.NewPTPProbeStop("ptp1"),
		agentproto.NewPTPSample(s),
		agentproto.NewPTPSample(agentproto.PTPSample{Probe: "ptp1", Seq: 8, AtNs: 1, Err: "board b: ptp4l socket /x: no such file"}),
		agentproto.NewPTPSample(agentproto.PTPSample{Probe: "ptp1", Seq: 9, AtNs: 2, End: agentproto.PTPEndStopped}),
	}
	for i, got := range roundTrip(t, msgs) {
		want := msgs[i]
		switch {
		case got.PTPProbe != nil && *got.PTPProbe != *want.PTPProbe:
			t.Errorf("message %d: probe %+v, want %+v", i, *got.PTPProbe, *want.PTPProbe)
		case got.PTPSample != nil && *got.PTPSample != *want.PTPSample:
			t.Errorf("message %d: sample %+v, want %+v", i, *got.PTPSample, *want.PTPSample)
		}
	}
	st := s.Status()
	if st.PortState != timesync.PortStateSlave || st.Offset != -312 || st.MeanPathDelay != 4100 || st.GMIdentity != 0x02000afffee90001 ||
		!st.GMPresent || st.StepsRemoved != 1 || st.LastSyncIngress != (timesync.Stamp{Ns: 1767225600100000000, Clock: timesync.Realtime}) ||
		st.ReadAt.UnixNano() != 1767225600123456789 || st.PHCNote != "veth1 has no PHC" ||
		st.GMQuality != (timesync.ClockQuality{Class: 248, Accuracy: 0xfe, Variance: 0xffff}) ||
		st.PortEvents != (timesync.PortEvents{Subscribed: true, Changes: 2, First: timesync.PortStateListening, Lost: 1}) {
		t.Errorf("Status() = %+v", st)
	}
}

// TestPTPValidate: every bad field is refused with a message naming it.
func TestPTPValidate(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{`{"v":1,"kind":"ptp-probe","ptp_probe":{"probe":"a b","socket":"/s","period_ns":1000000000}}`, "ptp_probe.probe"},
		{`{"v":1,"kind":"ptp-probe","ptp_probe":{"probe":"p","period_ns":1000000000}}`, "ptp_probe.socket"},
		{`{"v":1,"kind":"ptp-probe","ptp_probe":{"probe":"p","socket":"/s","period_ns":1000}}`, "ptp_probe.period_ns"},
		{`{"v":1,"kind":"ptp-probe","ptp_probe":{"probe":"p","socket":"/s","period_ns":1000000000,"request_timeout_ns":-1}}`, "request_timeout_ns"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":0,"at_ns":1}}`, "ptp_sample.seq"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":0}}`, "ptp_sample.at_ns"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"end":"later"}}`, "ptp_sample.end"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"end":"stopped","err":"x"}}`, "both end"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"port_state":"SLAVISH"}}`, "port state"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"gm_identity":"zz"}}`, "clock identity"},
		{`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"phc_sys_delay_ns":-5}}`, "negative phc_sys_delay_ns"},
		{`{"v":1,"kind":"ptp-sample","ptp_probe":{"probe":"p","stop":true}}`, "carries"},
	} {
		_, err := agentproto.Decode([]byte(tc.line))
		if err == nil || !errors.Is(err, agentproto.ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want a protocol error naming %q", tc.line, err, tc.want)
		}
	}
	if _, err := agentproto.Decode([]byte(`{"v":1,"kind":"ptp-probe","ptp_probe":{"probe":"p","stop":true}}`)); err != nil {
		t.Errorf("stop needs only the probe id: %v", err)
	}
	// A negative mean path delay is ptp4l's reading, not a malformed
	// sample: it reaches the lock check, which refuses it by name (it
	// used to be dropped here, and the board then read as silent).
	m, err := agentproto.Decode([]byte(`{"v":1,"kind":"ptp-sample","ptp_sample":{"probe":"p","seq":1,"at_ns":1,"mean_path_delay_ns":-2300}}`))
	if err != nil || m.PTPSample.Status().MeanPathDelay != -2300 {
		t.Errorf("negative mean path delay: %v, want carried as -2.3µs", err)
	}
}

// FuzzPTPDecode: any line decodes to a structured error or to a PTP
// message that re-encodes to an identical one.
func FuzzPTPDecode(f *testing.F) {
	seedEncoded(f,
		agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "ptp1", Socket: "/var/run/ptp4l", PeriodNs: int64(time.Second)}),
		agentproto.NewPTPProbeStop("ptp1"),
		agentproto.NewPTPSample(lockedSample()),
		agentproto.NewPTPSample(agentproto.PTPSample{Probe: "ptp1", Seq: 9, AtNs: 2, End: agentproto.PTPEndShutdown}))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := fuzzDecode(t, line)
		if !ok {
			return
		}
		m2 := reencode(t, m)
		if m.PTPSample != nil && *m.PTPSample != *m2.PTPSample {
			t.Fatalf("sample %+v became %+v", *m.PTPSample, *m2.PTPSample)
		}
		if m.PTPProbe != nil && *m.PTPProbe != *m2.PTPProbe {
			t.Fatalf("probe %+v became %+v", *m.PTPProbe, *m2.PTPProbe)
		}
	})
}
