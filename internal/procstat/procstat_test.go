package procstat

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStartTicks(t *testing.T) {
	// A command name with spaces and parentheses, as a process may set.
	stat := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100")
	if got, err := parseStartTicks(stat); err != nil || got != 987654 {
		t.Fatalf("parseStartTicks = %d, %v; want 987654", got, err)
	}
	for _, bad := range []string{"4242 no-paren S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 x 1000"} {
		if got, err := parseStartTicks([]byte(bad)); err == nil {
			t.Errorf("parseStartTicks(%q) = %d, nil; want an error", bad, got)
		}
	}
}

func TestStartTimeOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := StartTime(os.Getpid()); err == nil {
			t.Fatal("StartTime off Linux: want an error")
		}
		return
	}
	st, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// This test binary started moments ago (btime has 1 s resolution).
	if age := time.Since(st); age < -2*time.Second || age > time.Hour {
		t.Fatalf("StartTime(self) = %v, %v ago: want within the last hour", st, age)
	}
	if _, err := StartTime(1 << 30); err == nil {
		t.Fatal("StartTime of a pid that cannot exist: want an error")
	}
}

func TestSame(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs with Linux's layout")
	}
	me := os.Getpid()
	start, err := StartTicks(me)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pid   int
		start int64
		want  bool
	}{{me, start, true}, {me, start + 1, false}, {1 << 30, start, false}} {
		if got, err := Same(c.pid, c.start); err != nil || got != c.want {
			t.Errorf("Same(%d, %d) = %v, %v; want %v", c.pid, c.start, got, err, c.want)
		}
	}
}

func TestUsageOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, _, err := Usage(os.Getpid()); err == nil {
			t.Fatal("Usage off Linux: no error")
		}
		return
	}
	cpu1, rss, err := Usage(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("Usage(self) = %v, %d, %v; want a resident set", cpu1, rss, err)
	}
	// CPU time only grows: spin until the kernel's tick counts some.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cpu2, _, err := Usage(os.Getpid())
		if err != nil || cpu2 < cpu1 {
			t.Fatalf("Usage(self) = %v, %v after %v", cpu2, err, cpu1)
		}
		if cpu2 > cpu1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stuck at %v after 10 s of spinning", cpu1)
		}
	}
	if _, _, err := Usage(1 << 30); err == nil {
		t.Error("Usage of a pid that does not exist: no error")
	}
}
