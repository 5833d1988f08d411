package shm_test

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

func fill(b []byte, tag uint64) {
	binary.LittleEndian.PutUint64(b, tag)
	for i := 8; i < len(b); i++ {
		b[i] = byte(tag) ^ byte(i)
	}
}

// commitTags commits messages tagged 1..n of 64 bytes (fill).
func commitTags(w *shm.Writer, n uint64) {
	for tag := uint64(1); tag <= n; tag++ {
		b, _ := w.Acquire(0, now)
		fill(b, tag)
		w.Commit(64, shm.Meta{})
	}
}

// ringPair makes a ring of p with a writer and a reader "rd" of depth
// depth, both of this process.
func ringPair(t *testing.T, p shm.Params, depth int) (*shm.Region, *shm.Writer, *shm.Reader) {
	t.Helper()
	r := newRing(t, p)
	w, _ := shm.NewWriter(r, os.Getpid())
	rd, _ := shm.NewReader(r, os.Getpid(), "rd", depth, 0)
	return r, w, rd
}

func intact(b []byte) (uint64, bool) {
	tag := binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i++ {
		if b[i] != byte(tag)^byte(i) {
			return tag, false
		}
	}
	return tag, true
}

func newRing(t *testing.T, p shm.Params) *shm.Region {
	t.Helper()
	r, _, err := shm.NewAnon(p, os.Getpid(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shm.FreeAnon(r) })
	return r
}

func now() int64 { return time.Now().UnixNano() }

// A reader racing a writer that laps it as fast as it can (best effort,
// a ring of 2) never accepts a torn message: every delivered payload is
// intact for the whole time it is held, and the race shows up as
// retries/overruns, not as corruption.
func TestConcurrentWriterNeverTornDelivery(t *testing.T) {
	p := shm.Params{Topic: "t", MaxPayload: 4096, RingLen: 2}
	r := newRing(t, p)
	w, err := shm.NewWriter(r, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	rd, err := shm.NewReader(r, os.Getpid(), "rd", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for tag := uint64(1); !stop.Load(); tag++ {
			b, err := w.Acquire(0, now)
			if err != nil {
				t.Error(err)
				return
			}
			fill(b, tag)
			w.Commit(len(b), shm.Meta{})
		}
	}()
	var f shm.Frame
	delivered, torn, misses := 0, 0, 0
	deadline := time.Now().Add(10 * time.Second)
	var last uint64
	for delivered < 2000 && time.Now().Before(deadline) {
		if !tryNext(t, rd, &f) {
			misses++
			runtime.Gosched() // on a loaded 2-core box, let the writer run
			continue
		}
		tag, ok := intact(f.Payload)
		// Yield while holding: the writer keeps lapping the ring and must
		// not touch the held slot.
		runtime.Gosched()
		tag2, ok2 := intact(f.Payload)
		if !ok || !ok2 || tag != tag2 || tag != f.Seq || f.Seq <= last {
			torn++
		}
		last = f.Seq
		if err := rd.Release(); err != nil {
			t.Fatal(err)
		}
		delivered++
	}
	stop.Store(true)
	wg.Wait()
	st := rd.Stats()
	if torn != 0 {
		t.Fatalf("%d torn or out-of-order deliveries of %d", torn, delivered)
	}
	if delivered < 100 || st.Lost == 0 {
		t.Fatalf("delivered %d misses %d, stats %+v: the writer did not lap the reader, the test proves nothing", delivered, misses, st)
	}
	t.Logf("delivered %d, misses %d, stats %+v", delivered, misses, st)
}

// A ring entry naming a slot whose seqlock is not "committed at that
// position" (odd, as if being written, which a publisher never leaves in
// the ring) is corruption: the reader delivers nothing of it and fails
// with ErrCorrupt naming the ring, and stays failed.
func TestSeqlockMismatchIsCorrupt(t *testing.T) {
	p := shm.Params{Topic: "t", MaxPayload: 64, RingLen: 4}
	r, w, rd := ringPair(t, p, 4)
	commitTags(w, 3)
	e := atomic.LoadUint64(r.Entry(1))
	k := int(e & (1<<shm.PosShift - 1))
	atomic.StoreUint64(r.SlotVer(k), 2*2-1)
	var f shm.Frame
	if ok, err := rd.TryNext(&f); !ok || err != nil || f.Seq != 1 {
		t.Fatalf("message 1: %v %v seq %d", ok, err, f.Seq)
	}
	if err := rd.Release(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		ok, err := rd.TryNext(&f)
		if ok || !errors.Is(err, shm.ErrCorrupt) || !strings.Contains(err.Error(), "intra:t") || !strings.Contains(err.Error(), "slot") {
			t.Fatalf("call %d on a slot mid-write in the ring: %v %v, want ErrCorrupt naming the ring and the slot", i, ok, err)
		}
	}
}

// A writer that died after committing a message but before announcing it
// (head not moved) leaves it to the next writer, which announces it in
// the old epoch's position order and starts a new epoch after it.
func TestRecoveryAnnouncesCommittedMessage(t *testing.T) {
	p := shm.Params{Topic: "t", MaxPayload: 64, RingLen: 3}
	r, w, rd := ringPair(t, p, 3)
	commitTags(w, 2)
	atomic.StoreUint64(r.Head(), atomic.LoadUint64(r.Entry(0))) // message 2 committed, not announced
	// and a third one half written
	b, _ := w.Acquire(0, now)
	fill(b[:32], 3)
	w.Abandon() // dies: its lease goes, nothing else changes
	w2, err := shm.NewWriter(r, os.Getpid())
	if err != nil {
		t.Fatalf("taking over from a dead writer: %v", err)
	}
	b, _ = w2.Acquire(0, now)
	fill(b, 1)
	w2.Commit(64, shm.Meta{})
	var f shm.Frame
	type m struct {
		seq   uint64
		epoch uint32
	}
	var got []m
	for tryNext(t, rd, &f) {
		if _, ok := intact(f.Payload); !ok {
			t.Fatalf("torn delivery of %+v", f)
		}
		got = append(got, m{f.Seq, f.Epoch})
		if err := rd.Release(); err != nil {
			t.Fatal(err)
		}
	}
	want := []m{{1, 1}, {2, 1}, {1, 2}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %v, want %v", got, want)
	}
	if st := rd.Stats(); st.Lost != 0 || st.Epochs != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSecondLiveWriterRefused(t *testing.T) {
	r := newRing(t, shm.Params{Topic: "t", MaxPayload: 8, RingLen: 2})
	if _, err := shm.NewWriter(r, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := shm.NewWriter(r, os.Getpid()); err == nil {
		t.Fatal("second live writer accepted")
	}
}

func TestNames(t *testing.T) {
	n := shm.FileName("lab-1", "cam/front.raw")
	if n != "hilrig.lab-1.cam~front.raw" {
		t.Fatal(n)
	}
	d, tp, ok := shm.SplitName(n)
	if !ok || d != "lab-1" || tp != "cam/front.raw" {
		t.Fatal(d, tp, ok)
	}
	if _, _, ok := shm.SplitName("other"); ok {
		t.Fatal("foreign name accepted")
	}
}

// tryNext is TryNext for tests that expect no error.
func tryNext(t *testing.T, rd *shm.Reader, f *shm.Frame) bool {
	t.Helper()
	ok, err := rd.TryNext(f)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A publisher taking over a ring checks it is one a publisher can have
// left; a ring entry or head word written by anything else is refused
// with ErrCorrupt naming the ring and the entry, not used (a slot in two
// entries would be handed out twice).
func TestTakeoverRefusesCorruptRing(t *testing.T) {
	p := shm.Params{Topic: "t", MaxPayload: 64, RingLen: 4}
	for _, tc := range []struct {
		name string
		mess func(r *shm.Region)
		want string
	}{
		{"slot in two entries", func(r *shm.Region) {
			atomic.StoreUint64(r.Entry(1), atomic.LoadUint64(r.Entry(0))&(1<<shm.PosShift-1)|2<<shm.PosShift)
		}, "two ring entries"},
		{"entry position", func(r *shm.Region) { atomic.StoreUint64(r.Entry(2), 77<<shm.PosShift) }, "ring entry 2"},
		{"entry slot", func(r *shm.Region) { atomic.StoreUint64(r.Entry(0), 1<<shm.PosShift|0xffff) }, "ring entry 0"},
		{"head slot", func(r *shm.Region) { atomic.StoreUint64(r.Head(), 3<<shm.PosShift|0xfff0) }, "head word"},
		{"head vs entry", func(r *shm.Region) { atomic.AddUint64(r.Head(), 1) }, "head word"},
		{"uncommitted slot", func(r *shm.Region) {
			atomic.StoreUint64(r.SlotVer(int(atomic.LoadUint64(r.Entry(1))&(1<<shm.PosShift-1))), 3)
		}, "version 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(t, p)
			w, _ := shm.NewWriter(r, os.Getpid())
			commitTags(w, 3)
			w.Abandon()
			tc.mess(r)
			_, err := shm.NewWriter(r, os.Getpid())
			if !errors.Is(err, shm.ErrCorrupt) || !strings.Contains(err.Error(), "intra:t") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrCorrupt naming the ring and saying %q", err, tc.want)
			}
		})
	}
}
