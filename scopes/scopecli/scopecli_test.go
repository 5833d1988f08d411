package scopecli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/scopecli"
)

func run(ctx context.Context, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := scopecli.Run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"idn"},
		{"idn", "--driver", "tek"},
		{"measure", "--driver", "tek", "--addr", "127.0.0.1:1", "--src", "2", "--dst", "2"},
		{"measure", "--driver", "tek", "--addr", "x", "--src-edge", "up"},
		{"idn", "--driver", "nope", "--addr", "127.0.0.1:1"},
		{"sim", "--dialect", "lecroy"},
		{"sim", "--ch1", "sim:x/0"},
		{"idn", "--nosuchflag"},
	} {
		_, _, err := run(t.Context(), args...)
		if !errors.Is(err, scopecli.ErrUsage) {
			t.Errorf("%q: got %v, want ErrUsage", args, err)
		}
	}
}

// sim, idn and measure together: the simulator runs in one goroutine, the
// commands talk to it over loopback as a user would.
func TestSimIdnMeasure(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var simOut testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- scopecli.Run(ctx, []string{"sim", "--dialect", "keysight", "--period", "200us", "--delay", "40us", "--jitter", "0"}, &simOut, &simOut)
	}()
	re := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	var addr string
	testkit.Until(t, 5*time.Second, func() error {
		if addr = re.FindString(simOut.String()); addr == "" {
			return fmt.Errorf("sim never printed its address: %q", simOut.String())
		}
		return nil
	})
	out, _, err := run(t.Context(), "idn", "--driver", "keysight", "--addr", addr)
	if err != nil || !strings.HasPrefix(out, "KEYSIGHT TECHNOLOGIES,") {
		t.Fatalf("idn: %q, %v", out, err)
	}
	out, _, err = run(t.Context(), "measure", "--driver", "keysight", "--addr", addr, "--duration", "200ms", "--limit", "10")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "mean   40.000µs") || !strings.Contains(out, "count  10") ||
		!strings.Contains(out, "covers count 10, window: last 10 acquisitions, one query") {
		t.Fatalf("measure output:\n%s", out)
	}
	// Nothing wired to CH3/CH4: the instrument has no result. That is a
	// failure (it used to print "missing" and exit 0).
	out, _, err = run(t.Context(), "measure", "--driver", "keysight", "--addr", addr, "--src", "3", "--dst", "4", "--duration", "50ms")
	if !errors.Is(err, scopes.ErrNoResult) {
		t.Fatalf("measure with no result: err %v, want ErrNoResult; output:\n%s", err, out)
	}
	if !strings.Contains(out, "mean   missing") {
		t.Fatalf("measure with no result printed:\n%s", out)
	}
	// The wrong driver is refused, naming what answered.
	_, _, err = run(t.Context(), "idn", "--driver", "tek", "--addr", addr)
	if !errors.Is(err, scopes.ErrWrongInstrument) || !strings.Contains(err.Error(), "KEYSIGHT") {
		t.Fatalf("idn with the tek driver on a Keysight: %v, want ErrWrongInstrument naming KEYSIGHT", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("sim: %v", err)
	}
}

func TestSigrokDemo(t *testing.T) {
	if _, err := exec.LookPath("sigrok-cli"); err != nil {
		t.Skip("sigrok-cli not installed")
	}
	out, _, err := run(t.Context(), "measure", "--driver", "sigrok", "--addr", "demo", "--samples", "2000")
	if err != nil || !strings.Contains(out, "count") {
		t.Fatalf("%q, %v", out, err)
	}
}
