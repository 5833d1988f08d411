package steps_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

// A flow on the sim rack feeds the live endpoint while it runs: scraped
// over HTTP during Measure, the flow's delivered total is seen rising
// before the case exists, and it ends equal to the sum of the flow's
// agent windows.
func TestMeasureFeedsLiveWhileRunning(t *testing.T) {
	rack := simRack(t, fixtures.DetectSimEnv())
	env := openSimRig(t, rack)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, err := harness.ServeMetrics(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	const name = "intra 64B live"
	series := `hilrig_flow_messages_total{board="` // board filled below
	total := func() float64 {
		resp, err := http.Get("http://" + addr.String() + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, series) && strings.Contains(l, `flow="`+name+`",kind="delivered"}`) {
				v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				return v
			}
		}
		return 0
	}
	type result struct {
		run *steps.Ran
		err error
	}
	done := make(chan result, 1)
	go func() {
		run, err := steps.Measure(ctx, env, name, steps.Params{Path: steps.Intra, Payload: 64, RateHz: 400, Count: 1600,
			Window: 200 * time.Millisecond})
		done <- result{run, err}
	}()
	var seen []float64 // distinct positive totals scraped while Measure ran
	var res result
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-tick.C: // polling the endpoint while the flow runs
			if v := total(); v > 0 && (len(seen) == 0 || v != seen[len(seen)-1]) {
				seen = append(seen, v)
			}
		}
	}
	if res.err != nil {
		t.Fatalf("measure: %v\n%s", res.err, steps.Diagnostics(env))
	}
	if len(seen) < 2 {
		t.Fatalf("while the flow ran the live delivered total took %d distinct values %v, want it rising (≥ 2)", len(seen), seen)
	}
	var sum uint64
	for _, ws := range res.run.Result.Windows {
		for _, w := range ws {
			sum += w.Received
		}
	}
	if got := total(); got != float64(sum) || sum == 0 {
		t.Fatalf("after the flow the live total is %v, the flow's windows received %d", got, sum)
	}
	t.Logf("live delivered totals while running: %v; final %d (case delivered %d)", seen, sum, res.run.Case.Delivered)
}
