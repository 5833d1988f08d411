package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hilrig/hilrig/report"
)

// writeRun records one case whose latencies are 1..100 µs times scale and
// writes it as a result file, as a suite run does.
func writeRun(path string, scale int64) error {
	r := report.NewResult(report.RunInfo{Start: time.Unix(0, 0).UTC()})
	h := report.NewHistogram()
	for k := int64(1); k <= 100; k++ {
		h.Record(k * 1000 * scale) // ns
	}
	c := report.Case{Name: "shm 64B", Suite: "latency", Sent: 100, Delivered: 100, Histogram: h}
	c.Finalize()
	r.Cases = []report.Case{c}
	return r.WriteFile(path)
}

// Load two result files and compare them: the new run's latencies doubled,
// which is a regression beyond a 10 % threshold (`hilrig report compare`
// exits 3 on it).
func ExampleCompare() {
	dir, err := os.MkdirTemp("", "hilrig-report-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	basePath, newPath := filepath.Join(dir, "base.json"), filepath.Join(dir, "new.json")
	if err := writeRun(basePath, 1); err != nil {
		fmt.Println(err)
		return
	}
	if err := writeRun(newPath, 2); err != nil {
		fmt.Println(err)
		return
	}

	base, err := report.ReadFile(basePath)
	if err != nil {
		fmt.Println(err)
		return
	}
	cur, err := report.ReadFile(newPath)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(base.Cases), "case:", base.Cases[0].Suite, "/", base.Cases[0].Name)
	cmp := report.Compare(base, cur, report.CompareOptions{Threshold: 0.10})
	fmt.Println("regressed:", cmp.Regressed)
	fmt.Println(cmp.Err())
	// Output:
	// 1 case: latency / shm 64B
	// regressed: 1
	// report: regression: 1 case(s) beyond 10.0%
}
