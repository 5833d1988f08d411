package gpio

import (
	"fmt"
	"time"
)

// PairOptions bound the plausible sender→receiver delay. A receiver edge
// pairs with a sender edge only if receiver − sender lies in
// [MinDelay, MaxDelay]. Choose MaxDelay below the marking interval
// (sender edge spacing): with edges closer than the delay spread no
// timing-only pairing can tell a late edge from a lost one — that is what
// Mode.Every is for.
type PairOptions struct {
	// MinDelay is the smallest plausible delay (usually 0; negative only
	// when the two edge streams come from clocks with a known offset).
	MinDelay time.Duration
	// MaxDelay is the largest plausible delay; must exceed MinDelay.
	MaxDelay time.Duration
}

// Pair is a matched sender/receiver edge.
type Pair struct {
	// Index is the sender edge's ordinal in its line (its LineSeqno, or
	// its position from 1 when the capture has no sequence numbers): the
	// k of "k-th sender edge".
	Index    uint64
	Sender   Edge
	Receiver Edge
	// DelayNs is Receiver.TimestampNs − Sender.TimestampNs.
	DelayNs int64
}

// Unmatched is an edge that found no partner, with the reason.
type Unmatched struct {
	Edge Edge
	// Sender tells which stream the edge came from.
	Sender bool
	Reason string
}

// PairResult is the outcome of Pair.
type PairResult struct {
	Pairs     []Pair
	Unmatched []Unmatched
	// SenderDropped and ReceiverDropped count edges the capture lost
	// (gaps in LineSeqno); those edges cannot be paired.
	SenderDropped, ReceiverDropped uint64
	// SenderMerged and ReceiverMerged count places where edges vanished
	// without a LineSeqno gap: two neighbouring edges whose directions
	// disagree with the number of edges between them. Marker lines always
	// alternate (toggle, pulse and every-k modes alike), so a repeated
	// direction means an odd number of edges was never numbered — the
	// kernel's gpiolib-cdev folds two interrupts into one event when its
	// IRQ thread runs late (seen with gpio-sim under TCG on a loaded host),
	// and a pulse narrower than the capture resolves does the same. Each
	// place counts once (at least one edge lost).
	SenderMerged, ReceiverMerged uint64
	// Resyncs counts how often the k-th ↔ k-th alignment had to shift
	// (a lost message, a spurious edge, or an edge lost in capture).
	Resyncs int
}

func ordinal(e Edge, pos int) uint64 {
	if e.LineSeqno != 0 {
		return e.LineSeqno
	}
	return uint64(pos + 1)
}

// gaps counts LineSeqno gaps and direction breaks (see
// PairResult.SenderMerged) and marks, per edge, whether edges were lost
// just before it.
func gaps(es []Edge) (total, merged uint64, before []bool) {
	before = make([]bool, len(es))
	for i := 1; i < len(es); i++ {
		a, b := es[i-1].LineSeqno, es[i].LineSeqno
		step := uint64(1)
		if a != 0 && b > a {
			step = b - a
		}
		if step > 1 {
			total += step - 1
			before[i] = true
		}
		// An odd step flips the direction, an even one keeps it.
		if (es[i].Rising != es[i-1].Rising) != (step%2 == 1) {
			merged++
			before[i] = true
		}
	}
	return total, merged, before
}

// PairEdges matches the k-th sender edge with the k-th receiver edge.
// Both slices hold one line each, in capture order, on one clock. When a
// receiver edge is missing (message lost), extra (spurious edge), or an
// edge was lost in capture, the walk resynchronises on the delay window
// and reports the edges left over in Unmatched, with the reason.
func PairEdges(sender, receiver []Edge, opts PairOptions) (PairResult, error) {
	if opts.MaxDelay <= opts.MinDelay {
		return PairResult{}, fmt.Errorf("gpio: pair: MaxDelay %v must exceed MinDelay %v: %w", opts.MaxDelay, opts.MinDelay, ErrInvalidSpec)
	}
	for _, s := range [][]Edge{sender, receiver} {
		for i := 1; i < len(s); i++ {
			if s[i].TimestampNs < s[i-1].TimestampNs {
				return PairResult{}, fmt.Errorf("gpio: pair: edge %d of line %d goes back in time (%d < %d ns): edges must be in capture order: %w",
					i, s[i].Line, s[i].TimestampNs, s[i-1].TimestampNs, ErrInvalidSpec)
			}
		}
	}
	var r PairResult
	var sGap, rGap []bool
	r.SenderDropped, r.SenderMerged, sGap = gaps(sender)
	r.ReceiverDropped, r.ReceiverMerged, rGap = gaps(receiver)
	minNs, maxNs := int64(opts.MinDelay), int64(opts.MaxDelay)
	r.Pairs = make([]Pair, 0, min(len(sender), len(receiver)))
	i, j := 0, 0
	var align int64
	aligned := false
	lost := func(g []bool, k int) string {
		if g[k] {
			return " (edges were lost in capture just before it)"
		}
		return ""
	}
	for i < len(sender) && j < len(receiver) {
		s, rc := sender[i], receiver[j]
		d := rc.TimestampNs - s.TimestampNs
		switch {
		case d < minNs:
			r.Unmatched = append(r.Unmatched, Unmatched{Edge: rc, Reason: "no sender edge within the delay window before it: spurious edge, or its sender edge was not captured" + lost(sGap, i)})
			j++
		case d > maxNs:
			r.Unmatched = append(r.Unmatched, Unmatched{Edge: s, Sender: true, Reason: fmt.Sprintf("no receiver edge within %v: message lost or receiver edge not captured", opts.MaxDelay) + lost(rGap, j)})
			i++
		default:
			so, ro := ordinal(s, i), ordinal(rc, j)
			a := int64(ro) - int64(so)
			if aligned && a != align {
				r.Resyncs++
			}
			align, aligned = a, true
			r.Pairs = append(r.Pairs, Pair{Index: so, Sender: s, Receiver: rc, DelayNs: d})
			i++
			j++
		}
	}
	for ; i < len(sender); i++ {
		r.Unmatched = append(r.Unmatched, Unmatched{Edge: sender[i], Sender: true, Reason: "no receiver edge after it in the capture"})
	}
	for ; j < len(receiver); j++ {
		r.Unmatched = append(r.Unmatched, Unmatched{Edge: receiver[j], Reason: "no sender edge left to pair with"})
	}
	return r, nil
}

// SplitLines splits a mixed capture into the edges of two lines, keeping
// order; edges of other lines are ignored.
func SplitLines(edges []Edge, senderLine, receiverLine int) (sender, receiver []Edge) {
	for _, e := range edges {
		switch e.Line {
		case senderLine:
			sender = append(sender, e)
		case receiverLine:
			receiver = append(receiver, e)
		}
	}
	return sender, receiver
}
