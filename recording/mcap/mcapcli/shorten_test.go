package mcapcli

import "testing"

// Arrays are cut at any depth, the rest counted; everything else is
// copied as written.
func TestShortenJSON(t *testing.T) {
	in := `{"a":[1,2,3,4],"b":{"c":[[1,2,3],[4]],"d":"x\"y"},"e":[],"f":"18446744073709551615","g":-1.5e-7,"h":null,"i":true}`
	got, err := shortenJSON([]byte(in), 2)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":[1,2,"…+2 more"],"b":{"c":[[1,2,"…+1 more"],[4]],"d":"x\"y"},"e":[],"f":"18446744073709551615","g":-1.5e-7,"h":null,"i":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
