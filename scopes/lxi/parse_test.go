package lxi_test

import (
	"errors"
	"testing"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
)

func TestParseKeysightResults(t *testing.T) {
	st, err := lxi.ParseKeysightResults("Frequency(1),+1.0E+03,+9.9E+02,+1.1E+03,+1.0E+03,+1.0E+01,12,Delay(1-2),+1.2E-05,+1.0E-05,+1.4E-05,+1.2E-05,+1.6E-06,3")
	if err != nil {
		t.Fatal(err)
	}
	if st.Min.V != 1e-5 || st.Max.V != 1.4e-5 || st.Mean.V != 1.2e-5 || st.StdDev.V != 1.6e-6 || st.Count.N != 3 {
		t.Fatalf("%v", st)
	}
	st, err = lxi.ParseKeysightResults("Delay(1-2),+9.9E+37,+9.9E+37,+9.9E+37,+9.9E+37,+9.9E+37,0")
	if err != nil || st.Mean.OK || st.Count.N != 0 {
		t.Fatalf("no-measurement row: %v, %v", st, err)
	}
	if _, err := lxi.ParseKeysightResults("Frequency(1),1,2,3,4,5,6"); !errors.Is(err, scopes.ErrGarbage) {
		t.Fatalf("no delay row: %v", err)
	}
}

func FuzzParseKeysightResults(f *testing.F) {
	f.Add("Delay(1-2),+1.2E-05,+1.0E-05,+1.4E-05,+1.2E-05,+1.6E-06,3")
	f.Add("Delay,1,2,3,4,5")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := lxi.ParseKeysightResults(s)
		if err == nil && st.Mean.OK && st.Mean.V >= 9.9e37 {
			t.Fatalf("no-measurement accepted as a value: %v", st)
		}
	})
}
