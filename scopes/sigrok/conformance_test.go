package sigrok_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/scopes/scopesim"
	"github.com/hilrig/hilrig/scopes/scopetest"
	"github.com/hilrig/hilrig/scopes/sigrok"
)

// The Analyzer's process handling and parsing run through the shared
// conformance test with a stand-in sigrok-cli that prints the VCD of the
// pulses Feed describes (the demo device cannot be fed known delays).
func TestConformanceFakeCLI(t *testing.T) {
	fake, err := filepath.Abs(filepath.Join("testdata", "fake-sigrok-cli.sh"))
	if err != nil {
		t.Fatal(err)
	}
	scopetest.Run(t, func(t *testing.T) scopetest.Rig {
		dir := t.TempDir()
		t.Setenv("FAKE_SIGROK_DIR", dir)
		a, err := sigrok.New(sigrok.Config{Binary: fake, Driver: "fake", Samples: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		feed := func(_ context.Context, delays []int64) error {
			i := 0
			snd, rcv := scopesim.Pulses(len(delays), 1_000, 100_000, 1_000, func(int) int64 { d := delays[i]; i++; return d })
			var b strings.Builder
			b.WriteString("$timescale 1 ns $end\n$var wire 1 ! D0 $end\n$var wire 1 \" D1 $end\n$enddefinitions $end\n#0 0! 0\"\n")
			// merge the two edge lists in time order
			for len(snd) > 0 || len(rcv) > 0 {
				if len(rcv) == 0 || (len(snd) > 0 && snd[0].TimeNs <= rcv[0].TimeNs) {
					fmt.Fprintf(&b, "#%d %d!\n", snd[0].TimeNs, bit(snd[0].Rising))
					snd = snd[1:]
				} else {
					fmt.Fprintf(&b, "#%d %d\"\n", rcv[0].TimeNs, bit(rcv[0].Rising))
					rcv = rcv[1:]
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "capture.vcd"), []byte(b.String()), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
		}
		return scopetest.Rig{Scope: a, Feed: feed, Source: 1, Dest: 2}
	})
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
