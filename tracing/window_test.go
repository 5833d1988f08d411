package tracing

import (
	"slices"
	"testing"
)

// The trace text has µs timestamps rounded to the nearest: a marker
// written inside a 1.4 µs window was printed 9 ns after its end and the
// snapshot dropped it (TestSnapshotResumesRecording, 2 runs in 300). The
// lines and window are the ones of that failure.
func TestKeepWindowAllowsRounding(t *testing.T) {
	text := []byte(`# tracer: nop
           <...>-2955    [001] ...1.  5710.877768: tracing_mark_write: hlr probe seq=1
           <...>-2955    [001] ...1.  5710.877867: tracing_mark_write: hlr probe seq=2
           <...>-2955    [001] ...1.  5710.877869: tracing_mark_write: hlr probe seq=3
`)
	evs, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	got := keepWindow(evs, 5710877865629, 5710877866991)
	texts := make([]string, len(got))
	for i, e := range got {
		texts[i] = e.Text
	}
	// seq=2 may have happened inside (printed ≤ 500 ns late); seq=1 and
	// seq=3 are more than that outside.
	if want := []string{"hlr probe seq=2"}; !slices.Equal(texts, want) {
		t.Fatalf("kept %q, want %q", texts, want)
	}
}
