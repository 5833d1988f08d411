package scopesim

import "strings"

// matchHeader matches a SCPI command header against a pattern written the
// way programmer manuals write them: each node is "LONGform" with the
// required short form in capitals ("MEASUrement" accepts MEAS and
// MEASUREMENT, any case), and a trailing "<n>" accepts a number (default
// 1 when omitted, as SCPI numeric suffixes do). A leading ':' on either is
// ignored. It returns the numeric suffixes in order.
func matchHeader(pattern, header string) ([]int, bool) {
	p := strings.Split(strings.TrimPrefix(pattern, ":"), ":")
	h := strings.Split(strings.TrimPrefix(header, ":"), ":")
	if len(p) != len(h) {
		return nil, false
	}
	var nums []int
	for i := range p {
		pn, hasNum := strings.CutSuffix(p[i], "<n>")
		tok := strings.ToUpper(h[i])
		num := -1
		if hasNum {
			j := len(tok)
			for j > 0 && tok[j-1] >= '0' && tok[j-1] <= '9' {
				j--
			}
			if j < len(tok) {
				num = 0
				for _, c := range tok[j:] {
					num = num*10 + int(c-'0')
					if num > 1<<20 {
						return nil, false
					}
				}
			} else {
				num = 1
			}
			tok = tok[:j]
		}
		short := ""
		for _, c := range pn {
			if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '*' || c == '?' {
				short += string(c)
			} else {
				break
			}
		}
		if tok != short && tok != strings.ToUpper(pn) {
			return nil, false
		}
		if hasNum {
			nums = append(nums, num)
		}
	}
	return nums, true
}
