package timesync_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
	"github.com/hilrig/hilrig/timesync/timesynctest"
)

// TestPTP4LConformance runs the Source conformance test against a real
// ptp4l slave (its own rig, in parallel with TestRealPTP4L).
func TestPTP4LConformance(t *testing.T) {
	requireRig(t)
	t.Parallel()
	timesynctest.Run(t, func(t *testing.T) timesync.Source {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rig, err := ptprig.Start(ctx, &ptprig.Options{GMFirst: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rig.Close() })
		src, err := timesync.DialPTP4L(ctx, rig.SlaveSocket, nil)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}, &timesynctest.Options{LockWithin: 20 * time.Second})
}
