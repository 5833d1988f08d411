package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hilrig/hilrig/internal/cli"
)

// errBridge: `hilrig bridge` could not run the bridge.
var errBridge = errors.New("hilrig bridge")

// ddsTags are the --dds values of `hilrig bridge` and the build tag of
// the peer each needs.
var ddsTags = map[string]string{"cyclonedds": "cyclonedds", "fastdds-udp": "fastdds", "fastdds-shm": "fastdds"}

// runBridge runs `hilrig bridge`: the bridge's DDS side is cgo (peers/),
// so it runs in the peer agent binary (`hilrig-peer bridge`, ros2/bridge),
// built with the tag of the --dds it names (default cyclonedds); this
// CGO-free binary only picks the binary and passes the arguments on.
func runBridge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dds := "cyclonedds"
	for i, a := range args {
		v, ok := strings.CutPrefix(strings.TrimPrefix(a, "-"), "-dds")
		switch {
		case !ok:
			continue
		case strings.HasPrefix(v, "="):
			dds = v[1:]
		case v == "" && i+1 < len(args):
			dds = args[i+1]
		}
	}
	tag, ok := ddsTags[dds]
	if !ok {
		return fmt.Errorf("%w: --dds %q: want cyclonedds, fastdds-udp or fastdds-shm", cli.ErrUsage, dds)
	}
	return runPeerBin(ctx, errBridge, append([]string{"bridge"}, args...), []string{tag}, stdout, stderr)
}
