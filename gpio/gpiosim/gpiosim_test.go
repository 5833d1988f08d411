package gpiosim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/internal/core"
)

func create(t *testing.T, cfg gpiosim.Config) *gpiosim.Chip {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := gpiosim.Create("c", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	return c
}

func TestCreateValidation(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  gpiosim.Config
		want string
	}{
		{"a/b", gpiosim.Config{Lines: 1}, "chip name"},
		{"", gpiosim.Config{Lines: 1}, "chip name"},
		{"x", gpiosim.Config{Lines: 0}, "Lines = 0"},
		{"x", gpiosim.Config{Lines: 1, RingSize: 3}, "RingSize = 3"},
		{"x", gpiosim.Config{Lines: 1, LineNames: []string{"a", "b"}}, "2 line names for 1 lines"},
	} {
		tc.cfg.Dir = dir
		if _, err := gpiosim.Create(tc.name, tc.cfg); !errors.Is(err, gpio.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%q, %+v): %v, want ErrInvalidSpec with %q", tc.name, tc.cfg, err, tc.want)
		}
	}
}

func TestCreateExistingAndReopen(t *testing.T) {
	dir := t.TempDir()
	c := create(t, gpiosim.Config{Lines: 2, Dir: dir, Label: "bench-a", LineNames: []string{"TX"}})
	if _, err := gpiosim.Create("c", gpiosim.Config{Lines: 2, Dir: dir}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second Create of a live chip: %v, want exists", err)
	}
	o, err := gpiosim.OpenIn(dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	if o.Label() != "bench-a" || o.Lines() != 2 || o.RingSize() != gpiosim.DefaultRingSize {
		t.Fatalf("reopened: label %q lines %d ring %d", o.Label(), o.Lines(), o.RingSize())
	}
	if off, err := o.FindLine("TX"); err != nil || off != 0 {
		t.Fatalf("FindLine(TX) = %d, %v", off, err)
	}
	// A level set through one mapping is seen through the other.
	if err := c.Pull(1, true); err != nil {
		t.Fatal(err)
	}
	if lv, _ := o.Level(1); !lv {
		t.Fatal("level not shared between mappings")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); !errors.Is(err, gpio.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	names, err := gpiosim.List(dir)
	if err != nil || len(names) != 1 || names[0] != "c" {
		t.Fatalf("List = %v, %v", names, err)
	}
}

// TestOutputOutlivesChipHandle: closing the Chip handle first must not
// unmap memory a live Output or Watcher uses.
func TestOutputOutlivesChipHandle(t *testing.T) {
	dir := t.TempDir()
	c, err := gpiosim.Create("c", gpiosim.Config{Lines: 1, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(gpiosim.Path(dir, "c"))
	req := core.Request{Offset: 0, Consumer: "x"}
	o, err := c.RequestOutput(req, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch([]core.Request{req}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := o.Set(true); err != nil {
		t.Fatal(err)
	}
	var e core.Edge
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.ReadEdge(ctx, &e); err != nil || !e.Rising {
		t.Fatalf("edge %v, %v", e, err)
	}
	o.Close()
	w.Close()
}

// TestConcurrentWriters: Pull from many goroutines and a marker on other
// lines never corrupt the rings (run with -race as well).
func TestConcurrentWriters(t *testing.T) {
	c := create(t, gpiosim.Config{Lines: 4, RingSize: 1 << 14})
	reqs := []core.Request{{Offset: 0}, {Offset: 1}}
	w, err := c.Watch(reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const per = 2000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				c.Pull(g%2, (i+g)%2 == 0)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]core.Edge, 1024)
	last := map[int]core.Edge{}
	total := 0
	for {
		short, c2 := context.WithTimeout(ctx, 50*time.Millisecond)
		n, err := w.ReadEdges(short, buf)
		c2()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range buf[:n] {
			p, ok := last[e.Line]
			if ok && (e.LineSeqno != p.LineSeqno+1 || e.Rising == p.Rising || e.TimestampNs < p.TimestampNs) {
				t.Fatalf("line %d: edge %v after %v", e.Line, e, p)
			}
			last[e.Line] = e
			total++
		}
	}
	if total == 0 || w.Dropped() != 0 {
		t.Fatalf("read %d edges, dropped %d", total, w.Dropped())
	}
}

// FuzzOpen: whatever bytes sit in a chip file, opening it fails cleanly
// or yields a usable chip — never a crash.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	good, err := gpiosim.Create("seed", gpiosim.Config{Lines: 1, RingSize: 2, Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(good.Path())
	good.Remove()
	f.Add(seed)
	f.Add([]byte("HLGPSIM1"))
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, gpiosim.FilePrefix+"fz")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		c, err := gpiosim.OpenIn(dir, "fz")
		if err != nil {
			return
		}
		defer c.Close()
		for i := range c.Lines() {
			c.LineInfo(i)
			c.Pull(i, true)
		}
	})
}
