package power_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/power"
)

// fakeQEMU is a QEMU process as the vm driver sees it: QMP quit and
// system_reset end it (as under -no-reboot) unless it is frozen
// (SIGSTOPped: nothing answers until ctx ends).
type fakeQEMU struct {
	frozen bool
	mu     sync.Mutex
	cmds   []string
	killed bool
	exited chan struct{}
	once   sync.Once
}

func newFakeQEMU(frozen bool) *fakeQEMU {
	return &fakeQEMU{frozen: frozen, exited: make(chan struct{})}
}

func (q *fakeQEMU) QMP(ctx context.Context, cmd string) (json.RawMessage, error) {
	q.mu.Lock()
	q.cmds = append(q.cmds, cmd)
	q.mu.Unlock()
	if q.frozen {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	switch cmd {
	case "quit", "system_reset":
		q.once.Do(func() { close(q.exited) })
		return json.RawMessage(`{}`), nil
	case "query-status":
		return json.RawMessage(`{"status":"running","running":true}`), nil
	}
	return nil, errors.New("CommandNotFound")
}

func (q *fakeQEMU) Kill() {
	q.mu.Lock()
	q.killed = true
	q.mu.Unlock()
	q.once.Do(func() { close(q.exited) })
}

func (q *fakeQEMU) WaitExit(ctx context.Context) error {
	select {
	case <-q.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// owner runs one fakeQEMU at a time; Boot starts a fresh one.
type owner struct {
	cur   *fakeQEMU
	boots int
}

func (o *owner) Running() power.VM {
	if o.cur == nil {
		return nil
	}
	select {
	case <-o.cur.exited:
		return nil
	default:
		return o.cur
	}
}

func (o *owner) Boot(context.Context) error {
	o.boots++
	o.cur = newFakeQEMU(false)
	return nil
}

func TestVMDriver(t *testing.T) {
	cfg := fixtures.Power{Driver: fixtures.PowerVM, Timeout: 2 * time.Second}
	ctx := context.Background()

	// Cycle of an answering board: system_reset ends QEMU, a fresh boot.
	first := newFakeQEMU(false)
	o := &owner{cur: first}
	sw, err := power.NewVM("vm-a", cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := sw.Status(ctx); st != power.On || err != nil {
		t.Errorf("status of a running board: %v, %v; want on", st, err)
	}
	if err := sw.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(first.cmds, "system_reset") || first.killed || o.boots != 1 {
		t.Errorf("cycle: qmp %v, killed %v, boots %d; want system_reset, no kill, one boot", first.cmds, first.killed, o.boots)
	}

	// Off of a frozen board: QMP quit unanswered, killed after the
	// bounded wait (timeout/4, at least 1 s), well within the timeout.
	frozen := newFakeQEMU(true)
	o.cur = frozen
	start := time.Now()
	if err := sw.Off(ctx); err != nil {
		t.Fatalf("off of a frozen board: %v", err)
	}
	if took := time.Since(start); !frozen.killed || took > 1900*time.Millisecond {
		t.Errorf("off of a frozen board: killed %v after %v; want killed after about 1 s", frozen.killed, took)
	}
	if st, err := sw.Status(ctx); st != power.Off || err != nil {
		t.Errorf("status after off: %v, %v; want off", st, err)
	}
	if err := sw.On(ctx); err != nil || o.boots != 2 {
		t.Errorf("on: %v, boots %d; want a second boot", err, o.boots)
	}
	if err := sw.On(ctx); err != nil || o.boots != 2 {
		t.Errorf("on of a running board: %v, boots %d; want no boot", err, o.boots)
	}

	// The rack-only constructor refuses vm: the QEMU process belongs to
	// the rig that runs it.
	if _, err := power.NewVM("vm-a", fixtures.Power{Driver: fixtures.PowerCommand}, o); !errors.Is(err, power.ErrPower) {
		t.Errorf("NewVM with a command block: %v, want ErrPower", err)
	}
	if _, err := power.NewVM("vm-a", cfg, nil); !errors.Is(err, power.ErrPower) {
		t.Errorf("NewVM without an owner: %v, want ErrPower", err)
	}
}
