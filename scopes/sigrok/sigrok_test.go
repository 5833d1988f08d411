package sigrok_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"context"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/sigrok"
)

const handVCD = `$timescale 1 us $end
$scope module libsigrok $end
$var wire 1 ! D0 $end
$var wire 1 " D1 $end
$upscope $end
$enddefinitions $end
#0 0! 0"
#10 1!
#13 1"
#20 0!
#22 0"
#30 1!
#35 1"
`

func TestParseHandWrittenVCD(t *testing.T) {
	c, err := sigrok.ParseVCD(strings.NewReader(handVCD))
	if err != nil {
		t.Fatal(err)
	}
	d := sigrok.Delays(c, "D0", "D1", scopes.DelayConfig{Source: 1, Dest: 2})
	if len(d) != 2 || !near(d[0], 3e-6) || !near(d[1], 5e-6) {
		t.Fatalf("rising delays = %v, want [3µs 5µs]", d)
	}
	f := sigrok.Delays(c, "D0", "D1", scopes.DelayConfig{Source: 1, Dest: 2, SourceEdge: scopes.Falling, DestEdge: scopes.Falling})
	if len(f) != 1 || !near(f[0], 2e-6) {
		t.Fatalf("falling delays = %v, want [2µs]", f)
	}
}

func near(a, b float64) bool { return a-b < 1e-15 && b-a < 1e-15 }

func TestParseRecordedDemo(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "demo-d0-d1.vcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := sigrok.ParseVCD(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.TimescaleNs != 1000 {
		t.Fatalf("timescale = %v ns, want 1000 (1 MHz)", c.TimescaleNs)
	}
	if len(c.Edges["D0"]) < 100 || len(c.Edges["D1"]) < 100 {
		t.Fatalf("too few edges: D0 %d, D1 %d", len(c.Edges["D0"]), len(c.Edges["D1"]))
	}
	for _, ch := range []string{"D0", "D1"} {
		e := c.Edges[ch]
		for i := 1; i < len(e); i++ {
			if e[i].TimeNs < e[i-1].TimeNs || e[i].Rising == e[i-1].Rising {
				t.Fatalf("%s edge %d: not alternating/ordered: %+v %+v", ch, i, e[i-1], e[i])
			}
		}
	}
	d := sigrok.Delays(c, "D0", "D1", scopes.DelayConfig{Source: 1, Dest: 2})
	st := scopes.StatsFromDelays(d)
	if !st.Mean.OK || st.Min.V < 0 || st.Max.V > 100e-6 {
		t.Fatalf("demo delays out of range: %v", st)
	}
}

func TestParseVCDErrors(t *testing.T) {
	for _, bad := range []string{
		"$timescale 1 qs $end\n$enddefinitions $end\n",
		"$var wire 1 ! D0 $end\n$enddefinitions $end\n#5\n#3\n",
		"$var wire 1 ! D0 $end\n$enddefinitions $end\n1?\n",
		"$var wire 1 ! D0 $end\n",
	} {
		if _, err := sigrok.ParseVCD(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseVCD(%q) accepted bad input", bad)
		}
	}
}

func FuzzParseVCD(f *testing.F) {
	f.Add(handVCD)
	f.Add("$enddefinitions $end\n#1\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := sigrok.ParseVCD(strings.NewReader(s))
		if err != nil {
			return
		}
		for name, e := range c.Edges {
			for i := 1; i < len(e); i++ {
				if e[i].TimeNs < e[i-1].TimeNs {
					t.Fatalf("%s: edges out of order", name)
				}
			}
		}
	})
}

// The demo driver through the real sigrok-cli: process handling, VCD
// parsing and statistics end to end.
func TestDemoDevice(t *testing.T) {
	if _, err := exec.LookPath("sigrok-cli"); err != nil {
		t.Skip("sigrok-cli not installed (apt-get install sigrok-cli)")
	}
	a, err := sigrok.New(sigrok.Config{Driver: "demo", SampleRateHz: 1_000_000, Samples: 5000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	id, err := a.Identify(ctx)
	if err != nil || id.Vendor != "sigrok" || !strings.Contains(id.Firmware, "sigrok-cli") {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
	if _, err := a.ReadStats(ctx); err == nil {
		t.Fatal("ReadStats before ConfigureDelay succeeded")
	}
	if err := a.ConfigureDelay(ctx, scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := a.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.ReadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.FetchDelays(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Count.OK || st.Count.N == 0 || int(st.Count.N) != len(d) {
		t.Fatalf("stats %v vs %d fetched delays", st, len(d))
	}
	// The figures must be those of the fetched delays; what they cover
	// (Window, Snapshot) is the analyzer's to say, and it must say it.
	want := scopes.StatsFromDelays(d)
	if st.Window.Kind == scopes.WindowUnknown {
		t.Errorf("stats %v do not say what they cover", st)
	}
	want.Window, want.Snapshot = st.Window, st.Snapshot
	if want != st {
		t.Fatalf("stats %v differ from stats of fetched delays %v", st, want)
	}
}
