package agentproto_test

import (
	"bytes"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

func validLoad() agentproto.Start {
	return agentproto.Start{Endpoint: "load", Role: agentproto.Load, Load: &agentproto.LoadSpec{Threads: 2, CPUs: []int{0, 1}}}
}

func TestLoadStartValidate(t *testing.T) {
	mem := validLoad()
	mem.Load = &agentproto.LoadSpec{Threads: 1, Kind: agentproto.LoadMem, MemMiB: 64}
	for _, ok := range []agentproto.Start{validLoad(), mem} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok.Load, err)
		}
	}
	checkInvalid(t, "load", validLoad, []invalidCase{
		{"no load spec", "start.load", func(s *agentproto.Start) { s.Load = nil }},
		{"load spec on a subscriber", "start.load", func(s *agentproto.Start) {
			s.Role, s.Contract = agentproto.Subscriber, middleware.Contract{Topic: "t", MaxPayload: 8}
		}},
		{"zero threads", "start.load.threads", func(s *agentproto.Start) { s.Load.Threads = 0 }},
		{"too many threads", "start.load.threads", func(s *agentproto.Start) { s.Load.Threads = agentproto.MaxLoadThreads + 1 }},
		{"negative cpu", "start.load.cpus[1]", func(s *agentproto.Start) { s.Load.CPUs = []int{0, -1} }},
		{"unknown kind", "start.load.kind", func(s *agentproto.Start) { s.Load.Kind = "fpu" }},
		{"mem without size", "start.load.mem_mib", func(s *agentproto.Start) { s.Load.Kind = agentproto.LoadMem }},
		{"mem too big", "start.load.mem_mib", func(s *agentproto.Start) {
			s.Load.Kind, s.Load.MemMiB = agentproto.LoadMem, agentproto.MaxLoadMemMiB+1
		}},
		{"size on alu", "start.load.mem_mib", func(s *agentproto.Start) { s.Load.MemMiB = 1 }},
		{"with a topic", "no contract", func(s *agentproto.Start) { s.Contract.Topic = "t" }},
		{"negative duration", "start.duration_ns", func(s *agentproto.Start) { s.DurationNs = -1 }},
		{"endpoint cpu", "start.cpu", func(s *agentproto.Start) { c := 0; s.CPU = &c }},
		{"real-time priority", "start.priority", func(s *agentproto.Start) { s.Priority = 50 }},
	})
}

// TestLoadRoundTrip: a load start and a final with its report survive the
// wire.
func TestLoadRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	enc := agentproto.NewEncoder(&buf)
	if err := enc.Encode(agentproto.NewStart(validLoad())); err != nil {
		t.Fatal(err)
	}
	fin := &agentproto.Final{Endpoint: "load", Role: agentproto.Load, Reason: agentproto.EndStopped, DurationNs: 5,
		Load: &agentproto.LoadReport{Threads: 2, Kind: agentproto.LoadALU, CPUNs: 7, ThreadCPUNs: []int64{3, 4}, WallNs: 5, Work: 9}}
	if err := enc.Encode(&agentproto.Msg{Kind: agentproto.KindFinal, Final: fin}); err != nil {
		t.Fatal(err)
	}
	dec := agentproto.NewDecoder(&buf)
	m, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Start; g.Role != agentproto.Load || g.Load == nil || g.Load.Threads != 2 || len(g.Load.CPUs) != 2 {
		t.Errorf("decoded start = %+v load %+v", g, g.Load)
	}
	m, err = dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Final.Load; r == nil || r.CPUNs != 7 || len(r.ThreadCPUNs) != 2 || r.Work != 9 {
		t.Errorf("decoded load report = %+v", r)
	}
}

// FuzzLoadDecode: load start lines decode to a valid start or a
// structured error; a decoded load start always carries its spec.
func FuzzLoadDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"l","role":"load","contract":{"topic":"","max_payload":0},"load":{"threads":2,"cpus":[0,1]}}}`))
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"l","role":"load","contract":{"topic":"","max_payload":0},"load":{"threads":1,"kind":"mem","mem_mib":8}}}`))
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"l","role":"publisher","contract":{"topic":"t","max_payload":8},"payload":8,"count":1,"load":{"threads":1}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := fuzzDecode(t, line)
		if !ok || m.Kind != agentproto.KindStart {
			return
		}
		if (m.Start.Role == agentproto.Load) != (m.Start.Load != nil) {
			t.Fatalf("role %s with load spec %v decoded", m.Start.Role, m.Start.Load)
		}
		if l := m.Start.Load; l != nil && (l.Threads < 1 || l.Threads > agentproto.MaxLoadThreads) {
			t.Fatalf("load of %d threads decoded", l.Threads)
		}
	})
}
