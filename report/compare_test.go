package report_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report"
)

func TestComparePlantedRegression(t *testing.T) {
	base := fixedResult()
	cur := fixedResult()
	// Plant: case 0's p99 up 50 %, case 1's throughput down 30 %.
	cur.Cases[0].Summary.P99 = base.Cases[0].Summary.P99 * 3 / 2
	cur.Cases[1].ThroughputMBps = base.Cases[1].ThroughputMBps * 0.7
	cur.Cases = append(cur.Cases, report.Case{Name: "brand new", Suite: "latency"})

	c := report.Compare(base, cur, report.CompareOptions{Threshold: 0.10})
	status := map[string]string{}
	for _, cd := range c.Cases {
		status[cd.Key] = cd.Status
	}
	if status["latency/shm-copy 1KiB 1kHz"] != "regressed" || status["latency/udp 1KiB 1kHz"] != "regressed" || status["latency/brand new"] != "new" {
		t.Errorf("statuses %v", status)
	}
	if c.Regressed != 2 || !errors.Is(c.Err(), report.ErrRegression) {
		t.Errorf("regressed=%d err=%v", c.Regressed, c.Err())
	}
	var out bytes.Buffer
	c.WriteTable(&out)
	if !strings.Contains(out.String(), "+50.0%") || !strings.Contains(out.String(), "-30.0%") || !strings.Contains(out.String(), "REGRESSED") {
		t.Errorf("table:\n%s", out.String())
	}

	// Same data: no regression; a 50 % threshold tolerates the plant.
	if c := report.Compare(base, fixedResult(), report.CompareOptions{Threshold: 0.10}); c.Err() != nil {
		t.Errorf("identical runs: %v", c.Err())
	}
	if c := report.Compare(base, cur, report.CompareOptions{Threshold: 0.5}); c.Err() != nil {
		t.Errorf("threshold 50%%: %v", c.Err())
	}
	// Improvement is not a regression; a vanished case is.
	better := fixedResult()
	better.Cases[0].Summary.P99 /= 2
	better.Cases = better.Cases[:1]
	c = report.Compare(base, better, report.CompareOptions{Threshold: 0.10})
	if c.Cases[0].Status != "improved" || c.Regressed != 1 || c.Cases[1].Status != "missing" {
		t.Errorf("improved/missing: %+v", c.Cases)
	}
}
