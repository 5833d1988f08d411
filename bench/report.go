package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// FormatSize prints a byte count the way sizes are given on the command
// line (16B, 1KiB, 64KiB, 1MiB, 10MiB).
func FormatSize(n int) string { return bytesize.Exact(int64(n), "") }

func us(ns int64) string { return fmt.Sprintf("%.3f", float64(ns)/1e3) }

// name is the transport as ratios name it: "udp+key" when authenticated.
func name(r Result) string {
	if r.Auth {
		return r.Transport + "+key"
	}
	return r.Transport
}

func label(r Result) string {
	s := name(r)
	if r.Wait != "" {
		s += "/" + r.Wait + "/" + r.Path
	}
	if q := reliableQoS(r); q != "" {
		s += "/" + q
	}
	if r.Dedicated {
		s += "/dedicated"
	}
	if r.GSO {
		s += "/gso"
	}
	if r.NetNS {
		s += "/netns"
	}
	return s
}

// WriteTable prints the report for humans: one row per transport, size and
// metric (round trip, one-way = RTT/2), in microseconds.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "transport\tsize\tmetric\tn\tmin µs\tp50 µs\tp90 µs\tp99 µs\tp99.9 µs\tmax µs\t\n")
	for _, x := range r.Results {
		for _, m := range []struct {
			name string
			p    Percentiles
		}{{"rtt", x.RTT}, {"one-way", x.OneWay}} {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", label(x), FormatSize(x.Size), m.name, m.p.Count,
				us(m.p.Min), us(m.p.P50), us(m.p.P90), us(m.p.P99), us(m.p.P999), us(m.p.Max))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "ratio %s / %s at %s: p50 %.2fx  p99 %.2fx  (per-round p50 ratio %.2fx..%.2fx, %d rounds alternating)\n",
			q.Middleware, q.Baseline, FormatSize(q.Size), q.P50, q.P99, q.RoundP50Min, q.RoundP50Max, roundsOf(r, q))
	}
	if r.Probe != nil {
		fmt.Fprintf(w, "cache-line probe (raw-spin RTT p50): before %d ns, after %d ns", r.Probe.BeforeNs, r.Probe.AfterNs)
		if r.Probe.Disturbed {
			fmt.Fprintf(w, "  DISTURBED: %s — discard this run", r.Probe.Reason)
		} else {
			fmt.Fprint(w, "  (undisturbed)")
		}
		fmt.Fprintln(w)
		b, a := r.Probe.StallsBefore, r.Probe.StallsAfter
		if b.RoundTrips > 0 && a.RoundTrips > 0 {
			worst := max(b.Fraction(), a.Fraction())
			fmt.Fprintf(w, "platform stalls (bare spin round trips >= %s, no middleware): before %.0f/s (%.3f%%), after %.0f/s (%.3f%%)",
				time.Duration(b.StallNs), b.PerSecond, 100*b.Fraction(), a.PerSecond, 100*a.Fraction())
			if worst > 0 {
				// The quantile at or above which a spin transport's tail
				// can be the platform's alone.
				fmt.Fprintf(w, ": spin percentiles above p%s are the platform's", trimPct(100*(1-worst)))
			}
			fmt.Fprintln(w)
		}
	}
	writeTracingWarning(w, r.KernelTracing)
	cpu := func(c int) string {
		if c < 0 {
			return "free"
		}
		return fmt.Sprint(c)
	}
	_, err := fmt.Fprintf(w, "%d round trips per size after %d warm-up; ping CPU %s, pong CPU %s; %d CPUs; clock read in each sample ~%d ns; took %s\n",
		r.N, r.Warmup, cpu(r.PingCPU), cpu(r.PongCPU), r.CPUs, r.ClockNs, r.Duration)
	return err
}

func roundsOf(r *Report, q Ratio) int {
	for _, x := range r.Results {
		if name(x) == q.Middleware && x.Size == q.Size {
			return len(x.RoundP50)
		}
	}
	return 0
}

// WriteJSON prints the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// tableWriter is every bench report: pingpong, throughput, ddsperf.
type tableWriter interface{ WriteTable(w io.Writer) error }

// writeReport prints rep as indented JSON or as its table: the one output
// step every bench sub-command ends with.
func writeReport(w io.Writer, asJSON bool, rep tableWriter) error {
	if asJSON {
		return writeJSON(w, rep)
	}
	return rep.WriteTable(w)
}

// ParseSizes parses "16,1KiB,64k,1MiB,10M" (suffixes B, K/KB/KiB, M/MB/MiB
// are all binary).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseSize(f string) (int, error) {
	u := strings.ToLower(f)
	mult := 1
	for _, suf := range []struct {
		s string
		m int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSuffix(u, suf.s), suf.m
			break
		}
	}
	var n int
	if _, err := fmt.Sscanf(u, "%d", &n); err != nil || fmt.Sprint(n) != u || n <= 0 {
		return 0, fmt.Errorf("%w: size %q: want a positive number with optional B, KiB or MiB", ErrUsage, f)
	}
	return n * mult, nil
}

// trimPct prints a percentile like 99.87 with at most two decimals and no
// trailing zeros.
func trimPct(p float64) string {
	s := strconv.FormatFloat(math.Floor(p*100)/100, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// writeTracingWarning says which kernel trace buffers were recording
// during the run (kernelTracing), if any.
func writeTracingWarning(w io.Writer, active []string) {
	if len(active) > 0 {
		fmt.Fprintf(w, "WARNING: kernel tracing was recording (%s): every traced scheduler switch and IRQ costs time inside these figures\n",
			strings.Join(active, "; "))
	}
}
