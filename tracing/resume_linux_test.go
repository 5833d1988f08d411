package tracing

import (
	"slices"
	"testing"
)

// A snapshot pauses recording only while it reads: events after it are
// recorded and seen by the next snapshot.
func TestSnapshotResumesRecording(t *testing.T) {
	needTrace(t)
	s, err := Arm(Config{BufferKB: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range uint64(3) {
		from := mono()
		if err := s.MarkSeq("probe", i); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Snapshot(from, mono(), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := string(AppendMarker(nil, "probe", i))
		if !slices.ContainsFunc(snap.Events, func(e Event) bool { return e.Kind == Marker && e.Text == want }) {
			t.Fatalf("snapshot %d (%d events) lacks %q", i, len(snap.Events), want)
		}
	}
}
