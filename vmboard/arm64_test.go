package vmboard_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/vmboard"
)

var arm64Built onceImage

// arm64Image builds (or finds in the cache) the arm64 board image once per
// process. The cold cross build takes many minutes on a loaded machine.
func arm64Image(t *testing.T) *vmboard.Image {
	t.Helper()
	needVM(t)
	needARM64(t)
	return arm64Built.get(t, "arm64 board image", 60*time.Minute, vmboard.BuildOptions{Arch: vmboard.ArchARM64, Jobs: 2})
}

// stressCount is how often the in-board torn-read stress runs: once in the
// short form CI runs, HILRIG_VM_STRESS times when set (a longer soak).
func stressCount(t *testing.T) string {
	v := os.Getenv("HILRIG_VM_STRESS")
	if v == "" {
		return "1"
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		t.Fatalf("HILRIG_VM_STRESS=%q: want a count >= 1", v)
	}
	return v
}

// The arm64 tier: the in-board tests and the middleware's shared-memory
// and UDP codec tests, cross-compiled with GOARCH=arm64, in one arm64
// board (2 vCPUs, so the stress tests' goroutines and processes really run
// in parallel under multi-threaded TCG). Every binary must pass with no
// skips. What TCG can and cannot show about arm64 memory ordering is in
// docs/virtual-board.md.
func TestVMARM64Tier(t *testing.T) {
	im := arm64Image(t)
	if im.Arch != vmboard.ArchARM64 {
		t.Fatalf("image arch %q", im.Arch)
	}
	type bin struct{ name, pkg, run string }
	bins := []bin{
		{"uname", "", ""},
		{"gpiotest", "./gpio/gpiotest", "Kernel"},
		{"boardtest", "./vmboard/boardtest", ""},
		// Torn-read stress (a writer lapping a reader on a ring of 2),
		// seqlock corruption, crash recovery of a ring, takeover checks.
		{"shm", "./middleware/internal/shm", "TestConcurrentWriterNeverTornDelivery|TestSeqlockMismatchIsCorrupt|TestRecoveryAnnouncesCommittedMessage|TestTakeoverRefusesCorruptRing|TestLeasesDecideLiveness"},
		// A publisher process SIGKILLed mid-write 50 times; hot paths 0 allocs.
		{"middleware", "./middleware", "TestPublisherSIGKILL|TestHotPathsDoNotAllocate"},
		// The UDP wire codec: round trips, rejects, 0 allocs.
		{"udp-codec", "./middleware/internal/udp", "TestDataRoundTrip|TestParseRejects|TestDataFieldValidation|TestBatchRoundTrip|TestControlRoundTrip|TestCodecAllocs"},
	}
	var tests []vmboard.Test
	for _, b := range bins {
		if b.pkg == "" {
			tests = append(tests, vmboard.Test{Name: b.name, Command: "/bin/uname", Args: []string{"-m"}})
			continue
		}
		args := []string{"-test.v", "-test.count=1"}
		if b.run != "" {
			args = append(args, "-test.run", b.run)
		}
		if b.name == "shm" {
			args = []string{"-test.v", "-test.count=" + stressCount(t), "-test.run", b.run}
		}
		tests = append(tests, vmboard.Test{Name: b.name, Binary: goTestBinaryFor(t, b.pkg, "arm64"), Args: args})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	res, err := vmboard.Run(ctx, im, vmboard.RunOptions{Tests: tests, CPUs: 2, Timeout: 20 * time.Minute})
	logRun(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Tests[0].Output); got != "aarch64" {
		t.Fatalf("uname -m in the board: %q, want aarch64", got)
	}
	for i, b := range bins[1:] {
		out := res.Tests[i+1].Output
		if !strings.Contains(out, "\nPASS") && !strings.HasPrefix(out, "PASS") {
			t.Errorf("%s: exit 0 but no PASS line", b.name)
		}
		if strings.Contains(out, "--- SKIP") {
			t.Errorf("%s skipped tests inside the arm64 board", b.name)
		}
		for _, name := range strings.Split(b.run, "|") {
			if name != "" && name != "Kernel" && !strings.Contains(out, "--- PASS: "+name) {
				t.Errorf("%s: %s did not run and pass", b.name, name)
			}
		}
	}
	// bins[1] (res.Tests[1]) is gpiotest; this used to read Tests[2]
	// (boardtest), which no arm64 board had run to notice.
	if out := res.Tests[1].Output; res.Tests[1].Name != "gpiotest" || !strings.Contains(out, "--- PASS: TestConformanceKernel") {
		t.Errorf("gpiotest did not pass TestConformanceKernel on arm64")
	}
}

// needARM64 skips unless HILRIG_VM_ARM64=1. .ci/test sets it unless the
// machine has no board kernel cached at all: a cold x86 build plus a cold
// arm64 cross build (~12 min on 2 cores) would not fit .ci/run's budget
// there (docs/virtual-board.md, "CI").
func needARM64(t *testing.T) {
	t.Helper()
	if os.Getenv("HILRIG_VM_ARM64") != "1" {
		t.Skip("arm64 board tier: set HILRIG_VM_ARM64=1 as well as HILRIG_VM=1 (cross-builds an arm64 kernel; many minutes cold)")
	}
}
