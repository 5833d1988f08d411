package agent_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/testkit"
)

// A publisher pinned to a CPU with SCHED_FIFO changes the thread its hot
// loop is locked to; when the endpoint ends, that thread must end with it.
// Unlocked instead, it went back to the Go runtime's pool still pinned and
// real-time, and ran whatever goroutine came next — window flushes, trace
// snapshots, GC work — at SCHED_FIFO on the measured CPU in every later
// case of the agent process, where it competed with that case's
// endpoints at their own priority (TestTraceOnBreachNamesHog stalled in
// the later runs of one process: -count N).
func TestPinnedEndpointThreadEndsWithIt(t *testing.T) {
	testkit.NeedRoot(t, "SCHED_FIFO and pinning need root")
	cpu := 0
	// Threads already there: an earlier test may have left one pinned
	// where it cannot end (the main thread, which a locked goroutine
	// cannot take down); only what this test's endpoints changed counts.
	before := threadStates(t)
	s := startSession(t, t.TempDir())
	c := contract("rt/t")
	s.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "rtleak", Contract: c,
		CPU: &cpu, Priority: 5, Count: 200})
	s.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "rtleak", Contract: c,
		CPU: &cpu, Priority: 5, Payload: 64, Count: 200, RateHz: 10000})
	for range 2 {
		if f := s.expect(agentproto.KindFinal).Final; f.Reason != agentproto.EndCount {
			t.Fatalf("final %+v", f)
		}
	}
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
	// A locked goroutine's thread exits just after the goroutine, with no
	// event to wait for: poll /proc, bounded.
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if left = changedThreads(t, before, strconv.Itoa(cpu)); len(left) == 0 {
			return
		}
	}
	t.Fatalf("threads still pinned or real-time after their endpoints ended: %v", left)
}

// threadStates maps this process's threads to "policy P cpus LIST".
func threadStates(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		dir := "/proc/self/task/" + e.Name()
		st, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the ")" closing comm; policy is field 41 (proc(5)).
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		policy := -1
		if len(f) > 41-3 {
			policy, _ = strconv.Atoi(f[41-3])
		}
		out[e.Name()] = "policy " + strconv.Itoa(policy) + " cpus " + cpusAllowed(t, dir+"/status")
	}
	return out
}

// changedThreads lists the threads that run SCHED_FIFO/RR, or are pinned
// to the endpoints' CPU cpu, and were not so before (the states of
// threadStates at the test's start).
func changedThreads(t *testing.T, before map[string]string, cpu string) []string {
	t.Helper()
	var out []string
	for tid, st := range threadStates(t) {
		if st == before[tid] {
			continue
		}
		if !strings.HasPrefix(st, "policy 0 ") || strings.HasSuffix(st, " cpus "+cpu) {
			out = append(out, "tid "+tid+" "+st)
		}
	}
	return out
}

func cpusAllowed(t *testing.T, status string) string {
	t.Helper()
	b, err := os.ReadFile(status)
	if err != nil {
		return "" // a thread that exited: compared as changed only if it is still listed
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
