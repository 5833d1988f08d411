package shm_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// Two opens of one segment file in this process stand for two processes:
// each has its own descriptions, so their leases conflict as another
// process's would, with no PID anywhere. (The PID-namespace cases, which
// need root, are in middleware/ns_linux_test.go.)
func TestLeasesDecideLiveness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hilrig.t.lease")
	p := shm.Params{Topic: "lease", MaxPayload: 64, RingLen: 2, Reliable: true}
	open := func() *shm.Segment {
		s, err := shm.Open(path, p, shm.OpenOptions{Mode: 0o600, Gid: -1, PID: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()

	// Same pid recorded (both "PID 1"), different holders.
	w, err := shm.NewWriter(a.Region, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shm.NewWriter(b.Region, 1); !errors.Is(err, shm.ErrBusy) {
		t.Fatalf("second publisher while the first holds its lease: %v, want ErrBusy", err)
	}
	ra, err := shm.NewReader(a.Region, 1, "a", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := shm.NewReader(b.Region, 1, "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := shm.Inspect(path)
	if !in.PublisherAlive || len(in.Subscribers) != 2 || !in.Subscribers[0].Alive || !in.Subscribers[1].Alive {
		t.Fatalf("inspect: publisher alive %v, subscribers %+v", in.PublisherAlive, in.Subscribers)
	}
	// A live subscriber is never dropped, whatever its pid says.
	w.DropDead()
	if st := w.Stats(); st.Dropped != 0 {
		t.Fatalf("live subscribers dropped: %+v", st)
	}
	// b's subscriber dies: dropped at the next sweep, and its row is
	// taken by the next subscriber (a new generation).
	rb.Abandon()
	if in := shm.Inspect(path); in.Subscribers[1].Alive {
		t.Fatalf("inspect after death: %+v", in.Subscribers)
	}
	w.DropDead()
	if st := w.Stats(); st.Dropped != 1 {
		t.Fatalf("dead subscriber not dropped: %+v", st)
	}
	rc, err := shm.NewReader(b.Region, 1, "c", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	var f shm.Frame
	for i := 0; i < 5; i++ { // Reliable: the publisher waits for a and c
		buf, err := w.Acquire(now()+int64(1e9), now)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		fill(buf, uint64(i+1))
		w.Commit(len(buf), shm.Meta{})
		for _, rd := range []*shm.Reader{ra, rc} {
			if ok, err := rd.TryNext(&f); !ok || err != nil {
				t.Fatalf("read %d: %v %v", i, ok, err)
			}
			if err := rd.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The publisher dies: another takes over, through the other open.
	w.Abandon()
	if in := shm.Inspect(path); in.PublisherAlive {
		t.Fatal("dead publisher shown alive")
	}
	w2, err := shm.NewWriter(b.Region, 1)
	if err != nil {
		t.Fatalf("publisher after the first died: %v", err)
	}
	w2.Close()
	ra.Close()
	rc.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
