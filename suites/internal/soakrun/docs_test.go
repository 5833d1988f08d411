package soakrun_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// setFlags sets command-line flags for one test and restores them after.
func setFlags(t *testing.T, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		f := flag.Lookup(k)
		if f == nil {
			t.Fatalf("no flag -%s", k)
		}
		old := f.Value.String()
		if err := flag.Set(k, v); err != nil {
			t.Fatalf("-%s=%s: %v", k, v, err)
		}
		t.Cleanup(func() { _ = flag.Set(k, old) })
	}
}

func testPlanInputs(t *testing.T) (*fixtures.Config, *fixtures.Rack, *fixtures.BoundsProfile) {
	t.Helper()
	return planInputs(t, `
payload_sizes: [64]
rates_hz: [1000]
messages: 100
soak: {duration: 72h, short_duration: 30s, checkpoint: 10m}
traffic_mix:
  - {transport: shm, payload: 64, rate_hz: 1000}
`)
}

// planInputs parses a config and opens the sim rack with its default
// bounds profile: what NewPlan takes.
func planInputs(t *testing.T, config string) (*fixtures.Config, *fixtures.Rack, *fixtures.BoundsProfile) {
	t.Helper()
	cfg, err := fixtures.ParseConfig("ginkgo.config", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, rack, prof
}

// TestDurationForAcceleratedDoesNotStretchSmoke is the finding:
// -hilrig.soak-profile=accelerated -hilrig.soak-duration=40m made the
// smoke spec plan 40 minutes under its 3-minute timeout, and (Ordered)
// its failure skipped the accelerated soak that was asked for.
func TestDurationForAcceleratedDoesNotStretchSmoke(t *testing.T) {
	cfg, rack, prof := testPlanInputs(t)
	setFlags(t, map[string]string{"hilrig.soak-profile": "accelerated", "hilrig.soak-duration": "40m"})
	sel := soakrun.Select("sim")
	if sel.Smoke || sel.Long != soakrun.ProfileAccelerated {
		t.Fatalf("selection %+v: want the accelerated soak only", sel)
	}
	smoke, err := soakrun.NewPlan(soakrun.ProfileSmoke, cfg, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	if smoke.Duration != 30*time.Second {
		t.Errorf("smoke plan %v: the accelerated duration leaked into it", smoke.Duration)
	}
	acc, err := soakrun.NewPlan(sel.Long, cfg, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Duration != 40*time.Minute || acc.Flows[0].RateHz != 10000 {
		t.Errorf("accelerated plan %s: want 40m at 10 kHz", acc)
	}
}

// TestSmokeDurationStretchesItsTimeout: asking for a longer smoke soak
// gives the smoke spec a timeout that fits it.
func TestSmokeDurationStretchesItsTimeout(t *testing.T) {
	setFlags(t, map[string]string{"hilrig.soak-profile": "smoke", "hilrig.soak-duration": "10m"})
	sel := soakrun.Select("sim")
	if !sel.Smoke || sel.Long != "" || sel.SmokeTimeout < 10*time.Minute {
		t.Fatalf("selection %+v: want smoke only, timeout above 10m", sel)
	}
}

// TestTwoHourAcceleratedAssertsRSSTrends: an accelerated soak of 2 h
// asserts the RSS slope of every agent (the controller is one).
func TestTwoHourAcceleratedAssertsRSSTrends(t *testing.T) {
	cfg, rack, prof := testPlanInputs(t)
	setFlags(t, map[string]string{"hilrig.soak-profile": "accelerated", "hilrig.soak-duration": "2h"})
	p, err := soakrun.NewPlan("", cfg, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	if !p.TrendsAsserted || p.Bounds.MaxRSSSlopeKiBPerHour <= 0 {
		t.Fatalf("2 h accelerated plan does not assert RSS trends: %+v", p.Bounds)
	}
}

var docCmd = regexp.MustCompile(`(?m)^\s+go tool ginkgo (.*)\./suites/soak -- (.*)$`)

// TestDocumentedSoakCommands: docs/suites.md has one command per
// profile, each starts exactly that profile, and its Ginkgo --timeout
// leaves room for the profile's duration.
func TestDocumentedSoakCommands(t *testing.T) {
	cfg, rack, prof := testPlanInputs(t)
	doc, err := os.ReadFile("../../../docs/suites.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range docCmd.FindAllStringSubmatch(string(doc), -1) {
		t.Run(m[2], func(t *testing.T) {
			kv := map[string]string{}
			for _, a := range strings.Fields(m[2]) {
				k, v, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				kv[k] = v
			}
			want := kv["hilrig.soak-profile"]
			setFlags(t, kv)
			var timeout time.Duration
			for _, a := range strings.Fields(m[1]) {
				if v, ok := strings.CutPrefix(a, "--timeout="); ok {
					if timeout, err = time.ParseDuration(v); err != nil {
						t.Fatal(err)
					}
				}
			}
			sel := soakrun.Select(rack.Name)
			started := []string{}
			if sel.Smoke {
				started = append(started, soakrun.ProfileSmoke)
			}
			if sel.Long != "" {
				started = append(started, sel.Long)
			}
			if len(started) != 1 || started[0] != want {
				t.Fatalf("starts %v, want only %q", started, want)
			}
			seen[want] = true
			p, err := soakrun.NewPlan(started[0], cfg, rack, prof)
			if err != nil {
				t.Fatal(err)
			}
			// Start-up, the final drain and the report need minutes.
			if need := p.Duration + 5*time.Minute; timeout < need {
				t.Errorf("--timeout=%v kills a %v soak (want ≥ %v; Ginkgo's default is 1h)", timeout, p.Duration, need)
			}
		})
	}
	for _, p := range []string{soakrun.ProfileSmoke, soakrun.ProfileAccelerated, soakrun.ProfileFull} {
		if !seen[p] {
			t.Errorf("docs/suites.md has no command for profile %s", p)
		}
	}
}
