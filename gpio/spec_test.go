package gpio_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hilrig/hilrig/gpio"
)

func TestParseLineSpec(t *testing.T) {
	tests := []struct {
		in   string
		want gpio.LineSpec
		err  string
	}{
		{in: "gpiochip0/17", want: gpio.LineSpec{Chip: "gpiochip0", Line: "17"}},
		{in: "/dev/gpiochip2/MARK_TX", want: gpio.LineSpec{Chip: "/dev/gpiochip2", Line: "MARK_TX"}},
		{in: "sim:rack/3,active-low,open-drain,consumer=tx",
			want: gpio.LineSpec{Chip: "sim:rack", Line: "3", ActiveLow: true, Drive: gpio.DriveOpenDrain, Consumer: "tx"}},
		{in: "pinctrl-bcm2711/GPIO4,open-source", want: gpio.LineSpec{Chip: "pinctrl-bcm2711", Line: "GPIO4", Drive: gpio.DriveOpenSource}},
		{in: "gpiochip0", err: "want CHIP/LINE"},
		{in: "gpiochip0/", err: "want CHIP/LINE"},
		{in: "/17", err: "want CHIP/LINE"},
		{in: "sim:/3", err: "field chip is empty"},
		{in: "gpiochip0/-1", err: "field line is negative"},
		{in: "gpiochip0/1,bogus", err: `unknown option "bogus"`},
		{in: "gpiochip0/1,consumer=" + strings.Repeat("x", 40), err: "field consumer is 40 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) { checkParse(t, gpio.ParseLineSpec, tc.in, tc.want, tc.err) })
	}
}

func TestLineSpecYAML(t *testing.T) {
	var doc struct {
		Tx gpio.LineSpec `yaml:"tx"`
		Rx gpio.LineSpec `yaml:"rx"`
		M  gpio.Mode     `yaml:"mode"`
		M2 gpio.Mode     `yaml:"mode2"`
	}
	src := `
tx: {chip: gpiochip0, line: 17, active_low: true, drive: open-drain, consumer: tx-mark}
rx: sim:rack/RX_MARK,active-low
mode: pulse:5us,every:4
mode2: {kind: pulse, width: 2us, every: 2}
`
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	if want := (gpio.LineSpec{Chip: "gpiochip0", Line: "17", ActiveLow: true, Drive: gpio.DriveOpenDrain, Consumer: "tx-mark"}); doc.Tx != want {
		t.Fatalf("mapping form: %+v, want %+v", doc.Tx, want)
	}
	if want := (gpio.LineSpec{Chip: "sim:rack", Line: "RX_MARK", ActiveLow: true}); doc.Rx != want {
		t.Fatalf("text form: %+v, want %+v", doc.Rx, want)
	}
	if want := (gpio.Mode{Kind: gpio.Pulse, Width: 5 * time.Microsecond, Every: 4}); doc.M != want {
		t.Fatalf("mode text form: %+v", doc.M)
	}
	if want := (gpio.Mode{Kind: gpio.Pulse, Width: 2 * time.Microsecond, Every: 2}); doc.M2 != want {
		t.Fatalf("mode mapping form: %+v", doc.M2)
	}
	var bad struct {
		D gpio.Drive `yaml:"drive"`
	}
	if err := yaml.Unmarshal([]byte("drive: open-collector"), &bad); err == nil || !strings.Contains(err.Error(), "open-collector") {
		t.Fatalf("bad drive: %v", err)
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want gpio.Mode
		err  string
	}{
		{in: "toggle", want: gpio.Mode{}},
		{in: "", want: gpio.Mode{}},
		{in: "pulse:10us", want: gpio.Mode{Kind: gpio.Pulse, Width: 10 * time.Microsecond}},
		{in: "every:8", want: gpio.Mode{Every: 8}},
		{in: "pulse:1us,every:3", want: gpio.Mode{Kind: gpio.Pulse, Width: time.Microsecond, Every: 3}},
		{in: "pulse", err: "pulse width"},
		{in: "pulse:1s", err: "must be in (0, 10ms]"},
		{in: "every:x", err: "want an integer"},
		{in: "every:-2", err: "negative"},
		{in: "blink", err: "unknown part"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) { checkParse(t, gpio.ParseMode, tc.in, tc.want, tc.err) })
	}
}

// checkParse parses in with parse and checks the result: an error wrapping
// ErrInvalidSpec that contains wantErr, or else want, which must survive a
// round trip through its text form.
func checkParse[T interface {
	comparable
	String() string
}](t *testing.T, parse func(string) (T, error), in string, want T, wantErr string) {
	t.Helper()
	got, err := parse(in)
	if wantErr != "" {
		if !errors.Is(err, gpio.ErrInvalidSpec) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want ErrInvalidSpec containing %q", err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	// Round trip through the text form.
	back, err := parse(got.String())
	if err != nil || back != got {
		t.Fatalf("round trip %q: %+v, %v", got.String(), back, err)
	}
}

// FuzzParseLineSpec: the decoder never panics, and whatever it accepts
// survives a round trip through its text form.
func FuzzParseLineSpec(f *testing.F) {
	fuzzRoundTrip(f, gpio.ParseLineSpec, "gpiochip0/17", "sim:rack/3,active-low,open-drain,consumer=tx", "/dev/gpiochip1/X", "a/b,consumer=", "//,")
}

// FuzzParseMode: as FuzzParseLineSpec for marker modes.
func FuzzParseMode(f *testing.F) {
	fuzzRoundTrip(f, gpio.ParseMode, "toggle", "pulse:5us,every:4", "every:1", "pulse:1h")
}

// fuzzRoundTrip fuzzes parse from seeds: it must never panic, and what it
// accepts must parse back from its String form to an equal value.
func fuzzRoundTrip[T interface {
	comparable
	String() string
}](f *testing.F, parse func(string) (T, error), seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parse(s)
		if err != nil {
			return
		}
		back, err := parse(v.String())
		if err != nil || back != v {
			t.Fatalf("%q parsed to %+v, text %q re-parsed to %+v, %v", s, v, v.String(), back, err)
		}
	})
}
