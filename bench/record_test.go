package bench_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/bench"
	"github.com/hilrig/hilrig/recording/mcap/mcapjstest"
)

// TestPingPongRecord: --record writes every timed round trip, one
// channel per size, each message logged at its reply (send stamp + RTT)
// and published at its send; the file is never overwritten, and
// --record does not combine with --compare.
func TestPingPongRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pp.mcap")
	rep := runJSON(t, "pingpong", "--transport", "chan", "--size", "16,1KiB", "-n", "100", "--warmup", "10", "--probe=false", "--record", path, "--json")
	if rep.Recording != path {
		t.Fatalf("report's recording %q, want %q", rep.Recording, path)
	}
	counts := map[string]int{}
	for _, m := range mcapjstest.ReadFile(t, path) {
		counts[m.Topic]++
		var rt struct {
			SendNs int64 `json:"send_unix_ns"`
			RTTNs  int64 `json:"rtt_ns"`
		}
		if err := json.Unmarshal(m.Data, &rt); err != nil {
			t.Fatal(err)
		}
		if rt.RTTNs <= 0 || int64(m.PublishTime) != rt.SendNs || int64(m.LogTime) != rt.SendNs+rt.RTTNs {
			t.Fatalf("%s: %+v logged %d published %d", m.Topic, rt, m.LogTime, m.PublishTime)
		}
	}
	if counts["/pingpong/chan/16B"] != 100 || counts["/pingpong/chan/1024B"] != 100 || len(counts) != 2 {
		t.Fatalf("counts %v, want 100 on each of two channels", counts)
	}
	if _, err := runMain(t, "pingpong", "--transport", "chan", "-n", "10", "--probe=false", "--record", path); err == nil {
		t.Fatal("a second run overwrote the recording")
	}
	if _, err := runMain(t, "pingpong", "--transport", "shm", "--compare", "--record", path+"2"); !errors.Is(err, bench.ErrUsage) {
		t.Fatalf("--record with --compare: %v, want ErrUsage", err)
	}
}
