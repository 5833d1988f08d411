package dut_test

import (
	"fmt"
	"time"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
)

// Three stimuli 10 ms apart; the program echoes the first twice, the
// third after its deadline, never the second.
func ExampleCorrelate() {
	ms := int64(time.Millisecond)
	stimuli := []int64{0, 10 * ms, 20 * ms}
	responses := []dut.Response{
		{Mono: 1 * ms, Seq: 1},
		{Mono: 2 * ms, Seq: 1},
		{Mono: 29 * ms, Seq: 3},
	}
	t := dut.Correlate(fixtures.CorrelateEcho, stimuli, responses, 5*time.Millisecond)
	fmt.Printf("answered %d, missed %d (%.0f%%), duplicates %d, late %d, samples %v ns\n",
		t.Answered, t.Missed, 100*t.MissRate(), t.Duplicates, t.Late, t.Samples)
	// Output: answered 1, missed 2 (67%), duplicates 1, late 1, samples [1000000] ns
}
