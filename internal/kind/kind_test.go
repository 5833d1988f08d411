package kind_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/kind"
)

type textValue interface {
	encoding.TextMarshaler
	String() string
}

// roundTrip checks that every value of a kind marshals to its String, that
// the text decodes back to the same value, and that an unknown text is
// refused with ErrUnknown and an error naming every allowed value.
func roundTrip[T comparable, P interface {
	*T
	encoding.TextUnmarshaler
}](t *testing.T, what string, vals []T, wantText []string) {
	t.Helper()
	if len(vals) != len(wantText) {
		t.Fatalf("%s: %d values, %d texts", what, len(vals), len(wantText))
	}
	for i, v := range vals {
		tv := any(v).(textValue)
		b, err := tv.MarshalText()
		if err != nil || string(b) != wantText[i] || tv.String() != wantText[i] {
			t.Errorf("%s %d: MarshalText %q, %v; String %q; want %q", what, i, b, err, tv.String(), wantText[i])
		}
		var got T
		if err := P(&got).UnmarshalText(b); err != nil || got != v {
			t.Errorf("%s %q: UnmarshalText = %v, %v; want %v", what, b, got, err, v)
		}
		// The same through JSON, as result files and protocol lines carry it.
		j, err := json.Marshal(map[string]T{"v": v})
		if err != nil {
			t.Fatalf("%s %v: json: %v", what, v, err)
		}
		var back map[string]T
		if err := json.Unmarshal(j, &back); err != nil || back["v"] != v {
			t.Errorf("%s %s: json round trip = %v, %v", what, j, back["v"], err)
		}
	}
	var got T
	err := P(&got).UnmarshalText([]byte("carrier-pigeon"))
	if !errors.Is(err, kind.ErrUnknown) {
		t.Fatalf("%s: unknown text: err %v, want ErrUnknown", what, err)
	}
	for _, w := range wantText {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: refusal %q does not name %q", what, err, w)
		}
	}
	if !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), `"carrier-pigeon"`) {
		t.Errorf("%s: refusal %q names neither the kind nor the text", what, err)
	}
}

func TestTextRoundTrips(t *testing.T) {
	roundTrip(t, "wait strategy", kind.Waits, []string{"futex", "spin", "hybrid"})
	roundTrip(t, "send path", kind.SendPaths, []string{"copy", "loan"})
	roundTrip(t, "reliability", kind.Reliabilities, []string{"reliable", "best-effort"})
	roundTrip(t, "method kind", kind.MethodKinds, []string{"one-way", "rtt-half"})
	roundTrip(t, "middleware", kind.Middlewares, []string{"hilrig", "cyclonedds", "fastdds-shm", "fastdds-udp", "iceoryx"})
	roundTrip(t, "transport class", kind.Classes, []string{"in-process", "shared memory", "UDP, one host", "UDP, between boards", "UDP"})
}

// TestEmptyIsZero: a field the writer left out ("" in text, absent in
// JSON) is the zero value, which for Wait is the agent protocol's default,
// futex.
func TestEmptyIsZero(t *testing.T) {
	w := kind.WaitHybrid
	if err := w.UnmarshalText(nil); err != nil || w != kind.WaitFutex {
		t.Errorf("Wait from \"\" = %v, %v; want futex", w, err)
	}
	m := kind.Iceoryx
	if err := m.UnmarshalText(nil); err != nil || m != "" || m.Name() != kind.Hilrig || m.IsPeer() {
		t.Errorf("Middleware from \"\" = %q (name %q), %v; want hilrig's own", m, m.Name(), err)
	}
	var r struct {
		R kind.Reliability `json:"r,omitempty"`
		W kind.Wait        `json:"w,omitempty"`
	}
	if b, err := json.Marshal(r); err != nil || string(b) != "{}" {
		t.Errorf("zero values marshal to %s, %v; want {}", b, err)
	}
}

// TestMarshalRefusesOutside: a value built in Go outside its kind is not
// written (a result file never carries text its reader would refuse).
func TestMarshalRefusesOutside(t *testing.T) {
	for _, v := range []encoding.TextMarshaler{kind.Wait(9), kind.SendPath("teleport"), kind.Reliability("maybe"),
		kind.MethodKind("guess"), kind.Middleware("zeromq"), kind.Class("pigeon")} {
		if b, err := v.MarshalText(); !errors.Is(err, kind.ErrUnknown) {
			t.Errorf("%T %v: MarshalText = %q, %v; want ErrUnknown", v, v, b, err)
		}
	}
}

// A chip reference is decided simulated once, by its "sim:" prefix: Sim
// returns the name without it, a real chip (name, path or label) is not
// simulated, "sim:" alone and "" name no chip, and the text form is the
// reference as written (so JSON and YAML carry it unchanged).
func TestChip(t *testing.T) {
	for _, tc := range []struct {
		c       kind.Chip
		name    string
		sim, ok bool
	}{
		{kind.SimChip("rack"), "rack", true, true},
		{"sim:rack.hlr1", "rack.hlr1", true, true},
		{"gpiochip2", "", false, true},
		{"/dev/gpiochip2", "", false, true},
		{"pinctrl-bcm2711", "", false, true},
		{"sim:", "", true, false},
		{"", "", false, false},
	} {
		name, sim := tc.c.Sim()
		if name != tc.name || sim != tc.sim || tc.c.IsSim() != tc.sim || tc.c.Valid() != tc.ok {
			t.Errorf("%q: Sim = %q, %v; IsSim %v; Valid %v; want %q, %v, valid %v", tc.c, name, sim, tc.c.IsSim(), tc.c.Valid(), tc.name, tc.sim, tc.ok)
		}
		b, err := json.Marshal(tc.c)
		var back kind.Chip
		if err != nil || json.Unmarshal(b, &back) != nil || back != tc.c || string(b) != `"`+tc.c.String()+`"` {
			t.Errorf("%q: JSON %s (%v) read back as %q", tc.c, b, err, back)
		}
	}
}
