package harness

import (
	"fmt"
	"slices"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// defaultMiddlewares is the configuration's default: hilrig and every
// peer (those not installed are skipped with the reason).
var defaultMiddlewares = []string{rig.MiddlewareHilrig, "cyclonedds", "fastdds", "iceoryx"}

// resolveMiddlewares decides which of the configured middlewares run here:
// hilrig always; a peer when the peer agent can be built with it on this
// machine (its Debian packages installed; iceoryx also needs iox-roudi).
// It returns the runnable middleware names (hilrig first), the peer
// agent's build tags, and why each other peer is skipped.
func resolveMiddlewares(cfg *fixtures.Config) (names, tags []string, skips map[string]string) {
	want := cfg.Middlewares
	if len(want) == 0 {
		want = defaultMiddlewares
	}
	names = []string{rig.MiddlewareHilrig}
	skips = map[string]string{}
	for _, m := range want {
		pt, ok := fixtures.PeerTags[m]
		if !ok {
			continue // hilrig (validated by the config loader)
		}
		err := rig.PeerInstalled(pt.Tag)
		for _, n := range pt.Names {
			if slices.Contains(names, n) {
				continue
			}
			if err != nil {
				skips[n] = fmt.Sprintf("peer %s not installed on the controller: %v", n, err)
				continue
			}
			names = append(names, n)
		}
		if err == nil && !slices.Contains(tags, pt.Tag) {
			tags = append(tags, pt.Tag)
		}
	}
	return names, tags, skips
}

// MiddlewareSkip returns why specs on middleware mw do not run here, or
// "" when it runs.
func (tc *TestContext) MiddlewareSkip(mw string) string {
	if slices.Contains(tc.Middlewares, mw) {
		return ""
	}
	if r, ok := tc.PeerSkips[mw]; ok {
		return r
	}
	return fmt.Sprintf("middleware %s is not in ginkgo.config's middlewares", mw)
}
