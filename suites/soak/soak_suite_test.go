// The soak suite (label soak; its short form also smoke): the traffic mix
// of ginkgo.config runs on the rack's boards with churn, every window is
// checkpointed (fsynced JSONL under <report_dir>/soak/), and the soak
// verdicts (loss, memory growth, latency drift, window max, PTP, restart
// recovery) are judged at the end. Flags (after `--`):
//
//	-hilrig.soak-profile=smoke|full|accelerated   (sim rack: smoke)
//	-hilrig.soak-duration=5m   -hilrig.soak-window=10s   -hilrig.soak-churn=30m
//	-hilrig.soak-resume=FILE.jsonl   -hilrig.soak-out=FILE.jsonl   -hilrig.soak-progress=1m
//	-hilrig.soak-max-rss-slope=512 (KiB/h)   -hilrig.soak-max-drift=10 (%/day)
//	-hilrig.soak-max-recovery=2s   -hilrig.soak-max-unlocked=6
//	-hilrig.soak-heartbeat=30s -hilrig.soak-recoveries=2 (a lost board is power-cycled, or stops the soak, named)
//	-hilrig.soak-heap-profile=FILE (controller heap profile each window)
//
// Asking for a profile runs that profile only; one command per profile is
// in docs/suites.md ("Soak profiles"), e.g.
// go tool ginkgo --timeout=75m ./suites/soak -- -hilrig.soak-profile=accelerated
package soak_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestSoak(t *testing.T) { harness.RunSuite(t, "soak") }

var _ = ReportAfterSuite("hilrig soak report", harness.WriteReport)
