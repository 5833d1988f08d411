package scopes

import (
	"fmt"
	"math"
	"strings"
)

// Tolerance bounds how far a scope statistic may differ from the software
// statistic for the two to agree: |scope − software| <= AbsS + Rel·|scope|.
// AbsS is in seconds; Rel is a fraction (0.05 = 5 %).
type Tolerance struct {
	AbsS float64
	Rel  float64
}

// Comparison is one statistic compared between scope and software.
type Comparison struct {
	// Name is "mean", "min", "max", "stddev" or "count".
	Name string
	// Scope and Software are the two values (seconds, or a count).
	Scope, Software float64
	// Diff is Scope − Software.
	Diff float64
	// Compared is false when either side is missing the statistic.
	Compared bool
	// Agree is true when Compared and |Diff| is within the tolerance.
	Agree bool
}

// CrossCheck is the verdict of [CrossValidate].
type CrossCheck struct {
	Rows []Comparison
	// Agree is true when every compared row agrees and at least the mean
	// was compared; a check with nothing to compare never agrees.
	Agree bool
	// Explanation says in words what disagreed, by how much and in which
	// direction, or why nothing could be compared.
	Explanation string
}

// CrossValidate compares the scope's statistics with the software latency
// statistics for the same messages. The difference is always scope minus
// software: a negative mean difference means the software timestamps
// claim more latency than the wire shows (timestamps taken late or
// includes queueing after the marker edge); a positive one means the
// software under-reports (stamped before the real send, or the receiver's
// stamp is taken before the callback runs).
//
// Counts are compared exactly (a mismatch means edges and messages do not
// correspond, which invalidates the comparison); min/max/stddev use tol
// like the mean. Pure function; safe for concurrent use.
func CrossValidate(scope, software Stats, tol Tolerance) CrossCheck {
	var c CrossCheck
	var why []string
	add := func(name string, a, b Value) {
		r := Comparison{Name: name, Scope: a.V, Software: b.V, Compared: a.OK && b.OK}
		if r.Compared {
			r.Diff = a.V - b.V
			r.Agree = math.Abs(r.Diff) <= tol.AbsS+tol.Rel*math.Abs(a.V)
			if !r.Agree {
				dir := "more"
				if r.Diff < 0 {
					dir = "less"
				}
				why = append(why, fmt.Sprintf("%s: scope %s vs software %s (scope shows %s %s, tolerance ±%s)",
					name, FormatSeconds(a.V), FormatSeconds(b.V), FormatSeconds(math.Abs(r.Diff)), dir,
					FormatSeconds(tol.AbsS+tol.Rel*math.Abs(a.V))))
			}
		} else {
			side := "scope"
			if a.OK {
				side = "software"
			}
			why = append(why, fmt.Sprintf("%s: not compared, missing on the %s side", name, side))
		}
		c.Rows = append(c.Rows, r)
	}
	add("mean", scope.Mean, software.Mean)
	add("min", scope.Min, software.Min)
	add("max", scope.Max, software.Max)
	add("stddev", scope.StdDev, software.StdDev)
	cr := Comparison{Name: "count", Scope: float64(scope.Count.N), Software: float64(software.Count.N),
		Compared: scope.Count.OK && software.Count.OK}
	if cr.Compared {
		cr.Diff = cr.Scope - cr.Software
		cr.Agree = cr.Diff == 0
		if !cr.Agree {
			why = append(why, fmt.Sprintf("count: scope saw %d delays, software %d messages — edges and messages do not correspond one to one",
				scope.Count.N, software.Count.N))
		}
	} else {
		why = append(why, "count: not compared, missing on one side")
	}
	c.Rows = append(c.Rows, cr)

	c.Agree = c.Rows[0].Compared
	for _, r := range c.Rows {
		if r.Compared && !r.Agree {
			c.Agree = false
		}
	}
	switch {
	case !c.Rows[0].Compared:
		c.Explanation = "cannot cross-validate: the mean is missing on at least one side; " + strings.Join(why, "; ")
	case c.Agree:
		c.Explanation = fmt.Sprintf("scope and software agree: mean differs by %s (scope − software)", FormatSeconds(c.Rows[0].Diff))
		if len(why) > 0 {
			c.Explanation += "; " + strings.Join(why, "; ")
		}
	default:
		c.Explanation = "scope and software disagree — the software timestamps do not match the wire: " + strings.Join(why, "; ")
	}
	return c
}
