// Package netnstest is the test kit for tests that need two hosts: a pair
// of throw-away network namespaces joined by a veth, made for one test and
// deleted at its end. Tests only: it takes a testing.TB.
package netnstest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/netns"
)

// Pair makes two namespaces joined by a veth (o as for netns.NewPair; nil:
// defaults), or skips the test naming the missing capability (not root,
// not Linux). At the test's end the pair is closed, and the test fails if
// that fails or if either namespace is still listed. Blocks up to 20 s for
// the set-up.
func Pair(t testing.TB, o *netns.PairOptions) *netns.Pair {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("skipping cross-namespace test: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := netns.NewPair(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if names, _ := netns.List(); slices.Contains(names, p.A.Name) || slices.Contains(names, p.B.Name) {
			t.Errorf("namespaces left behind: %v", names)
		}
	})
	return p
}
