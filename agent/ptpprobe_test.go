package agent_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
)

// TestPTPProbeLifecycle: a probe of a socket that does not exist reports
// every poll as a failed sample naming board and socket (it keeps
// retrying: ptp4l may come up later), numbered without gaps and stamped
// on CLOCK_REALTIME; stop ends it with an end sample; stopping an unknown
// probe is an error naming it; a probe still running at shutdown ends
// with "shutdown" before the agent's bye. (The real-socket path is
// covered end to end in rig, against a real ptp4l.)
func TestPTPProbeLifecycle(t *testing.T) {
	s := startSession(t, t.TempDir())
	sock := filepath.Join(t.TempDir(), "ptp4l.sock")
	s.send(agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "p1", Socket: sock, PeriodNs: int64(20 * time.Millisecond)}))
	before := time.Now()
	for want := uint64(1); want <= 3; want++ {
		m := s.expect(agentproto.KindPTPSample).PTPSample
		if m.Probe != "p1" || m.Seq != want || m.End != "" {
			t.Fatalf("sample %+v: want probe p1 seq %d", m, want)
		}
		if !strings.Contains(m.Err, "board test") || !strings.Contains(m.Err, sock) {
			t.Errorf("sample err %q: want it to name board test and %s", m.Err, sock)
		}
		if at := time.Unix(0, m.AtNs); at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("sample at %v, not on this machine's CLOCK_REALTIME now", at)
		}
	}
	s.send(agentproto.NewPTPProbeStop("p1"))
	for {
		m := s.expect(agentproto.KindPTPSample).PTPSample
		if m.End != "" {
			if m.End != agentproto.PTPEndStopped {
				t.Errorf("end %q, want stopped", m.End)
			}
			break
		}
	}
	s.send(agentproto.NewPTPProbeStop("p1"))
	if e := s.expect(agentproto.KindError).Error; e.Code != agentproto.CodeUnknownEndpoint || e.Endpoint != "p1" {
		t.Errorf("stop of a stopped probe: %+v, want unknown-endpoint p1", e)
	}
	s.send(agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "p2", Socket: sock, PeriodNs: int64(time.Minute)}))
	if m := s.expect(agentproto.KindPTPSample).PTPSample; m.Probe != "p2" || m.Err == "" {
		t.Fatalf("first sample of p2: %+v", m)
	}
	s.send(agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "p2", Socket: sock, PeriodNs: int64(time.Minute)}))
	if e := s.expect(agentproto.KindError).Error; e.Code != agentproto.CodeDuplicateEndpoint || e.Endpoint != "p2" {
		t.Errorf("duplicate probe: %+v, want duplicate-endpoint p2", e)
	}
	s.send(agentproto.NewStop(""))
	if m := s.expect(agentproto.KindPTPSample).PTPSample; m.Probe != "p2" || m.End != agentproto.PTPEndShutdown {
		t.Errorf("at shutdown: %+v, want p2's end sample (shutdown)", m)
	}
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPTPProbeOfAStoppedPTP4LKeepsReporting: a socket that is bound but
// never read (a SIGSTOPped ptp4l) fills its 10-datagram queue; every
// later poll must still end within its request deadline, as a failed
// sample, and stop must still end the probe. The management write had no
// deadline: the probe went silent after about 11 polls and its stop (and
// the agent's shutdown) waited forever.
func TestPTPProbeOfAStoppedPTP4LKeepsReporting(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "stopped.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := startSession(t, t.TempDir())
	s.send(agentproto.NewPTPProbe(agentproto.PTPProbe{Probe: "p1", Socket: sock, PeriodNs: int64(10 * time.Millisecond),
		RequestTimeoutNs: int64(20 * time.Millisecond)}))
	for want := uint64(1); want <= 30; want++ {
		m := s.expect(agentproto.KindPTPSample).PTPSample
		if m.Seq != want || m.Err == "" || !strings.Contains(m.Err, sock) {
			t.Fatalf("sample %+v: want failed poll %d naming %s", m, want, sock)
		}
	}
	s.send(agentproto.NewPTPProbeStop("p1"))
	for {
		if m := s.expect(agentproto.KindPTPSample).PTPSample; m.End != "" {
			break
		}
	}
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}
