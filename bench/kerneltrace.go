package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// traceRoots are where tracefs is mounted, standard one first.
var traceRoots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// kernelTracing lists the kernel trace buffers recording while a benchmark
// runs: the top level and every instance (instances/NAME) that is on and
// has events enabled or a tracer other than nop. Each traced scheduler
// switch, wake-up or IRQ costs time inside the figures, so a report
// measured under one says so. Nothing (nil) when tracefs is not mounted
// or not readable (off Linux, not root).
func kernelTracing() []string {
	for _, root := range traceRoots {
		if _, err := os.Stat(filepath.Join(root, "set_event")); err != nil {
			continue
		}
		var out []string
		if d := traceActive(root); d != "" {
			out = append(out, "top level: "+d)
		}
		ents, _ := os.ReadDir(filepath.Join(root, "instances"))
		for _, e := range ents {
			if d := traceActive(filepath.Join(root, "instances", e.Name())); d != "" {
				out = append(out, "instances/"+e.Name()+": "+d)
			}
		}
		return out
	}
	return nil
}

// traceActive describes what the trace buffer in dir records, or "" when
// it records nothing.
func traceActive(dir string) string {
	on, err := os.ReadFile(filepath.Join(dir, "tracing_on"))
	if err != nil || strings.TrimSpace(string(on)) != "1" {
		return ""
	}
	var what []string
	if b, err := os.ReadFile(filepath.Join(dir, "set_event")); err == nil {
		switch n := len(strings.Fields(string(b))); n {
		case 0:
		case 1:
			what = append(what, "1 event")
		default:
			what = append(what, fmt.Sprintf("%d events", n))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "current_tracer")); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" && t != "nop" {
			what = append(what, "tracer "+t)
		}
	}
	return strings.Join(what, ", ")
}
