package scopesim

import "testing"

func TestMatchHeader(t *testing.T) {
	for _, tc := range []struct {
		pat, h string
		ok     bool
		nums   []int
	}{
		{"MEASUrement:MEAS<n>:SOUrce<n>", "MEASUrement:MEAS1:SOUrce2", true, []int{1, 2}},
		{"MEASUrement:MEAS<n>:SOUrce<n>", "measu:meas3:sou", true, []int{3, 1}},
		{"MEASUrement:MEAS<n>:SOUrce<n>", "MEASUREMENT:MEAS12:SOURCE1", true, []int{12, 1}},
		{"MEASUrement:MEAS<n>:SOUrce<n>", "MEAS:MEAS1:SOURCE1", false, nil},
		{":MEASure:STATistics", "MEAS:STAT", true, nil},
		{":MEASure:STATistics", ":MEASure:STATistics:RESet", false, nil},
		{"*IDN", "*idn", true, nil},
		{"MEASUrement:LIST", "MEASUREMENT:LISTX", false, nil},
	} {
		nums, ok := matchHeader(tc.pat, tc.h)
		if ok != tc.ok || (ok && len(nums) != len(tc.nums)) {
			t.Errorf("matchHeader(%q, %q) = %v, %v; want %v, %v", tc.pat, tc.h, nums, ok, tc.nums, tc.ok)
			continue
		}
		for i := range nums {
			if nums[i] != tc.nums[i] {
				t.Errorf("matchHeader(%q, %q) nums = %v, want %v", tc.pat, tc.h, nums, tc.nums)
			}
		}
	}
}

func FuzzMatchHeader(f *testing.F) {
	f.Add("MEASUrement:MEAS<n>:SOUrce<n>", "MEAS:MEAS99999999999:SOU")
	f.Add(":MEASure:ADVanced:P<n>", ":MEAS:ADV:P")
	f.Fuzz(func(t *testing.T, pat, h string) { _, _ = matchHeader(pat, h) })
}
