// Package bytesize is the one byte-count formatter of the project: sizes
// in case names, command-line values and fixture files (Exact), and
// memory figures in reports and messages (Approx). Binary units only
// (KiB = 1024 B). A leaf: standard library only, so middleware, report
// and the harness all use it. Pure functions, safe for concurrent use.
package bytesize

import "strconv"

var units = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Exact renders n in the largest binary unit it is an exact multiple of,
// with sep between number and unit: Exact(4096, "") is "4KiB",
// Exact(1000, " ") is "1000 B", Exact(0, "") is "0B". Names built with it
// are keys (case names, results-store history), so it never rounds.
func Exact(n int64, sep string) string {
	for _, u := range units {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + sep + u.name
		}
	}
	return strconv.FormatInt(n, 10) + sep + "B"
}

// Approx renders n to one decimal in the largest binary unit not above
// it, with sep between number and unit: Approx(1536<<10, " ") is
// "1.5 MiB"; below 1 KiB the count itself ("512 B"). For figures
// (memory, free space), never for names.
func Approx(n int64, sep string) string {
	for _, u := range units {
		if n >= u.n {
			return strconv.FormatFloat(float64(n)/float64(u.n), 'f', 1, 64) + sep + u.name
		}
	}
	return strconv.FormatInt(n, 10) + sep + "B"
}
