//go:build unix

package faultkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/middleware"
)

// Segment returns the segment of topic in domain under dir.
func Segment(dir, domain, topic string) (middleware.SegmentInfo, error) {
	segs, err := middleware.ListSegments(dir)
	if err != nil {
		return middleware.SegmentInfo{}, fmt.Errorf("%w: list %s: %w", ErrFault, dir, err)
	}
	want := middleware.SegmentPath(dir, domain, topic)
	for _, s := range segs {
		if filepath.Clean(s.Path) == filepath.Clean(want) {
			return s, nil
		}
	}
	return middleware.SegmentInfo{}, fmt.Errorf("%w: no segment %s in %s", ErrFault, filepath.Base(want), dir)
}

// Binary builds (or reuses, cached by content hash) the hilrig binary.
func Binary(ctx context.Context) (string, error) {
	return deploy.Build(ctx, deploy.BuildOptions{})
}

// Hilrig runs the real binary with args and returns its stdout; a
// non-zero exit is an error carrying stderr.
func Hilrig(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: hilrig %s: %w; stderr: %s", ErrFault, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// ShmLsEntry is the part of `hilrig shm ls --json` the faults check.
type ShmLsEntry struct {
	Path  string `json:"Path"`
	Topic string `json:"Topic"`
	State string `json:"State"`
	InUse bool   `json:"InUse"`
}

// ShmLs runs `hilrig shm ls --json --dir dir` and decodes it.
func ShmLs(ctx context.Context, bin, dir string) ([]ShmLsEntry, error) {
	out, err := Hilrig(ctx, bin, "shm", "ls", "--json", "--dir", dir)
	if err != nil {
		return nil, err
	}
	var es []ShmLsEntry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		return nil, fmt.Errorf("%w: hilrig shm ls --json: %w; output: %.500s", ErrFault, err, out)
	}
	return es, nil
}

// ShmClean runs `hilrig shm clean --dir dir` and returns the paths it says
// it removed.
func ShmClean(ctx context.Context, bin, dir string) ([]string, string, error) {
	out, err := Hilrig(ctx, bin, "shm", "clean", "--dir", dir)
	if err != nil {
		return nil, out, err
	}
	var removed []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "removed "); ok {
			p, _, _ := strings.Cut(rest, " (")
			removed = append(removed, p)
		}
	}
	return removed, out, nil
}
