package timesync_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

const (
	gmA timesync.ClockIdentity = 0x02000afffee90001
	gmB timesync.ClockIdentity = 0x02000afffee900ff
)

func slave(ingress int64, off time.Duration, gm timesync.ClockIdentity) timesync.Status {
	return timesync.Status{PortState: timesync.PortStateSlave, GMIdentity: gm, Offset: off, MeanPathDelay: 2 * time.Microsecond,
		LastSyncIngress: timesync.Stamp{Ns: ingress, Clock: timesync.Realtime}}
}

func TestTrackerConditions(t *testing.T) {
	bound := time.Microsecond
	tests := []struct {
		name     string
		expected timesync.ClockIdentity
		polls    []timesync.Status
		errs     []error
		want     []timesync.Condition
	}{
		{"locked after a previous poll", gmA,
			[]timesync.Status{slave(1, 0, gmA), slave(2, 10, gmA)}, nil,
			[]timesync.Condition{timesync.CondNoPreviousPoll, timesync.CondLocked}},
		{"ingress frozen (GM died, still SLAVE)", gmA,
			[]timesync.Status{slave(1, 0, gmA), slave(2, 0, gmA), slave(2, 0, gmA)}, nil,
			[]timesync.Condition{timesync.CondNoPreviousPoll, timesync.CondLocked, timesync.CondIngressStale}},
		{"not slave", gmA,
			[]timesync.Status{{PortState: timesync.PortStateListening}}, nil,
			[]timesync.Condition{timesync.CondNotSlave}},
		{"wrong GM from the fixture", gmA,
			[]timesync.Status{slave(1, 0, gmB)}, nil,
			[]timesync.Condition{timesync.CondWrongGM}},
		{"first GM seen is learned, a change is wrong", 0,
			[]timesync.Status{slave(1, 0, gmB), slave(2, 0, gmB), slave(3, 0, gmA)}, nil,
			[]timesync.Condition{timesync.CondNoPreviousPoll, timesync.CondLocked, timesync.CondWrongGM}},
		{"offset beyond bound, both signs", gmA,
			[]timesync.Status{slave(1, 0, gmA), slave(2, 1001, gmA), slave(3, -1001, gmA), slave(4, -1000, gmA)}, nil,
			[]timesync.Condition{timesync.CondNoPreviousPoll, timesync.CondOffsetOutOfBound, timesync.CondOffsetOutOfBound, timesync.CondLocked}},
		{"no path delay yet", gmA,
			[]timesync.Status{slave(1, 0, gmA), {PortState: timesync.PortStateSlave, GMIdentity: gmA, LastSyncIngress: timesync.Stamp{Ns: 2}}}, nil,
			[]timesync.Condition{timesync.CondNoPreviousPoll, timesync.CondNotMeasured}},
		{"read error", gmA,
			[]timesync.Status{{}}, []error{errors.New("boom")},
			[]timesync.Condition{timesync.CondReadError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := timesync.NewTracker(tt.expected, bound)
			for i, st := range tt.polls {
				var err error
				if i < len(tt.errs) {
					err = tt.errs[i]
				}
				v := tr.Observe(st, err)
				if v.Cond != tt.want[i] || v.Locked != (tt.want[i] == timesync.CondLocked) {
					t.Errorf("poll %d: %+v, want %s", i, v, tt.want[i])
				}
				if !v.Locked && v.Detail == "" {
					t.Errorf("poll %d: unlocked verdict without detail", i)
				}
			}
		})
	}
}

func TestRequireLockedFailureNamesBoardConditionAndValues(t *testing.T) {
	t.Parallel()
	good := timesyncsim.New(nil)
	bad := timesyncsim.New(nil)
	bad.Update(func(s *timesyncsim.State) { s.Offset = 5 * time.Microsecond })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := timesync.RequireLocked(ctx, []timesync.Board{{Name: "a", Source: good}, {Name: "b7", Source: bad}},
		time.Microsecond, 3, &timesync.RequireOptions{Period: 10 * time.Millisecond})
	if !errors.Is(err, timesync.ErrNotLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotLocked wrapping the deadline", err)
	}
	for _, want := range []string{`board "b7"`, "offset-out-of-bound", "|offset| 5µs > bound 1µs", "state SLAVE", "gm 02000a.fffe.e90001"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `board "a"`) {
		t.Errorf("error names the locked board a: %v", err)
	}
}

func TestRequireLockedFailsFastOnPermanentErrors(t *testing.T) {
	t.Parallel()
	src := timesyncsim.New(nil)
	src.Update(func(s *timesyncsim.State) { s.Err = timesync.ErrPermission })
	start := time.Now()
	err := timesync.RequireLocked(context.Background(), []timesync.Board{{Name: "x", Source: src}}, time.Microsecond, 2, nil)
	if !errors.Is(err, timesync.ErrPermission) || time.Since(start) > time.Second {
		t.Fatalf("err = %v after %v, want ErrPermission at once", err, time.Since(start))
	}
}

func TestRequireLockedValidates(t *testing.T) {
	src := timesyncsim.New(nil)
	for _, tc := range []struct {
		boards []timesync.Board
		bound  time.Duration
		n      int
	}{
		{nil, time.Microsecond, 1},
		{[]timesync.Board{{Name: "", Source: src}}, time.Microsecond, 1},
		{[]timesync.Board{{Name: "a", Source: src}, {Name: "a", Source: src}}, time.Microsecond, 1},
		{[]timesync.Board{{Name: "a"}}, time.Microsecond, 1},
		{[]timesync.Board{{Name: "a", Source: src}}, 0, 1},
		{[]timesync.Board{{Name: "a", Source: src}}, time.Microsecond, 0},
	} {
		if err := timesync.RequireLocked(context.Background(), tc.boards, tc.bound, tc.n, nil); !errors.Is(err, timesync.ErrBadConfig) {
			t.Errorf("%+v: err = %v, want ErrBadConfig", tc, err)
		}
	}
}
