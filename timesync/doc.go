// Package timesync says, at every moment of a run, whether each board's
// clock can be trusted and how far, and stamps messages with the right clock.
//
// Three jobs, one package:
//   - stamping: [Clock] names a kernel clock (CLOCK_MONOTONIC, CLOCK_REALTIME,
//     CLOCK_TAI) or a PTP hardware clock; a [Stamp] carries the clock it came
//     from, so a cross-host latency can never be computed from single-host
//     stamps by accident. [Stamper.Now] costs one vDSO read or one syscall
//     and allocates nothing;
//   - status: [Source] is the consumer-side view of one board's ptp4l; [PTP4L]
//     is the real one (management socket via github.com/facebook/time, in
//     internal/pmc) and timesync/timesyncsim the fake;
//   - health: [Tracker] judges a board locked (port SLAVE, expected
//     grandmaster, Sync ingress time advanced since the previous poll,
//     |offset| within the bound); [RequireLocked] gates a run on n consecutive
//     good samples; [Monitor] samples every board during a run, records the
//     series, raises loss-of-lock and GM-change [Event]s and answers, per
//     time window, whether the window was fully locked and what the clock
//     uncertainty bound is ([Monitor.Window]).
//
// See docs/timesync.md for what "locked" means and how the bound is computed.
package timesync
