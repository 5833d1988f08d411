package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// PTPResult is what the PTP gate saw.
type PTPResult struct {
	// Where describes the ptp4l instances checked.
	Where string
	// Offsets are the last |offset from master| per board.
	Offsets map[string]time.Duration
}

// PTPPolicy is what the rack accepts of its grandmaster and path (the
// fixture's ptp section: grandmaster_classes, max_path_delay), as the
// lock checks take it. A rack without a ptp section gets the defaults.
func PTPPolicy(rack *fixtures.Rack) timesync.LockPolicy {
	var p timesync.LockPolicy
	if rack.PTP == nil {
		return p
	}
	for _, c := range rack.PTP.GrandmasterClasses {
		// Validated 0..254 when the fixture was loaded.
		p.GMClasses = append(p.GMClasses, uint8(c))
	}
	p.MaxPathDelay = rack.PTP.MaxPathDelay
	return p
}

// RequirePTPLocked gates a run on PTP: every board with a ptp4l socket on
// the controller's host must report locked (port SLAVE or the
// grandmaster, Sync advancing, |offset| ≤ the rack's ptp.max_offset, the
// grandmaster's clockClass and the path delay accepted by the rack) for
// 3 consecutive polls. On the sim rack (no board names a ptp4l socket) it
// starts the real linuxptp pair of timesync/ptprig (free-running, never
// touching this machine's clock) and requires its slave locked. ssh boards
// are not reachable from the controller: their ptp4l status needs an
// agent-side probe, which the rig lacks, so they fail with that reason.
// Blocks until locked or ctx ends.
func RequirePTPLocked(ctx context.Context, rack *fixtures.Rack) (*PTPResult, error) {
	// 0: timesync.DefaultBound by timestamping mode (a fixed 1 µs flaps
	// with software timestamping, which the sim rack's ptp4l uses).
	var bound time.Duration
	if rack.PTP != nil && rack.PTP.MaxOffset > 0 {
		bound = rack.PTP.MaxOffset
	}
	policy := PTPPolicy(rack)
	res := &PTPResult{Offsets: map[string]time.Duration{}}
	var boards []timesync.Board
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	for _, b := range rack.Boards {
		if b.Clock.PTP4LSocket == "" {
			continue
		}
		if !b.OnController() {
			return nil, fmt.Errorf("board %s: ptp4l socket %s is on the board; reading it needs an agent-side PTP probe, which the rig lacks", b.Name, b.Clock.PTP4LSocket)
		}
		p, err := timesync.DialPTP4L(ctx, b.Clock.PTP4LSocket, nil)
		if err != nil {
			return nil, fmt.Errorf("board %s: %w", b.Name, err)
		}
		closers = append(closers, p.Close)
		boards = append(boards, timesync.Board{Name: b.Name, Source: p, Policy: policy})
	}
	if len(boards) == 0 {
		pr, err := ptprig.Start(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("rack %s claims ptp but names no ptp4l socket; the sim PTP pair: %w", rack.Name, err)
		}
		closers = append(closers, pr.Close)
		sl, err := timesync.DialPTP4L(ctx, pr.SlaveSocket, nil)
		if err != nil {
			return nil, fmt.Errorf("sim PTP slave: %w", err)
		}
		closers = append([]func() error{sl.Close}, closers...)
		boards = append(boards, timesync.Board{Name: "ptprig-slave", Source: sl, ExpectedGM: pr.GMIdentity, Policy: policy})
		res.Where = fmt.Sprintf("linuxptp pair of timesync/ptprig (free-running grandmaster %s → slave, software timestamps over a veth)", pr.GMIdentity)
	} else {
		res.Where = fmt.Sprintf("ptp4l of %d board(s) on the controller host", len(boards))
	}
	if err := timesync.RequireLocked(ctx, boards, bound, 3, nil); err != nil {
		return res, err
	}
	for _, b := range boards {
		st, err := b.Source.Status(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			return res, fmt.Errorf("board %s: %w", b.Name, err)
		}
		off := st.Offset
		if off < 0 {
			off = -off
		}
		res.Offsets[b.Name] = off
	}
	return res, nil
}
