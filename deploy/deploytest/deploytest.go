// Package deploytest builds the hilrig binary that fixtures' integration
// tests deploy as the agent: always the real ./cmd/hilrig, so a test never
// passes against a stand-in the boards would not run.
package deploytest

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/deploy"
)

// Build builds ./cmd/hilrig into cacheDir (content-hashed, reused while
// the sources are unchanged) and returns the binary path and a note for
// test logs. Blocks for the build, at most 20 minutes: a cold build (modernc
// sqlite and all) on two busy cores has taken over 8.
func Build(cacheDir string) (bin, note string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin, err = deploy.Build(ctx, deploy.BuildOptions{CacheDir: cacheDir})
	if err != nil {
		return "", "", fmt.Errorf("deploytest: build hilrig: %w", err)
	}
	return bin, "hilrig built from ./cmd/hilrig", nil
}
