package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
)

// kernelTracing names every buffer that is on with events or a tracer,
// and nothing else; the reports print it.
func TestKernelTracingListsRecordingBuffers(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"set_event": "", "tracing_on": "1\n", "current_tracer": "nop\n", // on, but records nothing
		"instances/left-1/tracing_on": "1\n", "instances/left-1/set_event": "sched:sched_switch\nirq:softirq_entry\n", "instances/left-1/current_tracer": "nop\n",
		"instances/off-2/tracing_on": "0\n", "instances/off-2/set_event": "sched:sched_switch\n",
		"instances/fn-3/tracing_on": "1\n", "instances/fn-3/set_event": "", "instances/fn-3/current_tracer": "function\n",
	} {
		testkit.WriteFile(t, filepath.Join(root, name), body)
	}
	old := traceRoots
	traceRoots = []string{filepath.Join(root, "absent"), root}
	defer func() { traceRoots = old }()
	got := kernelTracing()
	slices.Sort(got)
	want := []string{"instances/fn-3: tracer function", "instances/left-1: 2 events"}
	if !slices.Equal(got, want) {
		t.Fatalf("kernelTracing() = %q, want %q", got, want)
	}
	var b strings.Builder
	if err := (&Report{KernelTracing: got}).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "WARNING: kernel tracing was recording (instances/fn-3: tracer function; instances/left-1: 2 events)") {
		t.Fatalf("the table does not warn:\n%s", b.String())
	}
	traceRoots = []string{filepath.Join(root, "absent")}
	if got := kernelTracing(); got != nil {
		t.Fatalf("without tracefs: %q, want nil", got)
	}
}

// Against the kernel's own tracefs: an instance recording scheduler
// switches is seen, by name.
func TestKernelTracingSeesRealInstance(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs Linux tracefs and root")
	}
	root := ""
	for _, r := range traceRoots {
		if _, err := os.Stat(filepath.Join(r, "instances")); err == nil {
			root = r
			break
		}
	}
	if root == "" {
		t.Skip("tracefs not mounted")
	}
	name := "hilrig-bench-test-" + strings.ReplaceAll(t.Name(), "/", "_")
	dir := filepath.Join(root, "instances", name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "tracing_on"), []byte("0"), 0)
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "events/sched/sched_switch/enable"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	for _, l := range kernelTracing() {
		if l == "instances/"+name+": 1 event" {
			return
		}
	}
	t.Fatalf("kernelTracing() = %q lacks instances/%s", kernelTracing(), name)
}
