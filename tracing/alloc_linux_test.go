package tracing

import "testing"

// MarkSeq is on the endpoints' send and receive path when armed: 0 allocs.
func TestMarkSeqAllocs(t *testing.T) {
	needTrace(t)
	s, err := Arm(Config{CPUs: []int{0}, BufferKB: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := testing.AllocsPerRun(200, func() { _ = s.MarkSeq("send", 12345) }); n != 0 {
		t.Fatalf("MarkSeq allocates %.1f/op", n)
	}
}
