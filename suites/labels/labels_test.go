package labels_test

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/suites/labels"
)

func TestValidate(t *testing.T) {
	if err := labels.Validate(labels.All()...); err != nil {
		t.Fatal(err)
	}
	if err := labels.Validate(labels.Replay); err != nil {
		t.Fatalf("replay (suites/replay) is not in the vocabulary: %v", err)
	}
	if err := labels.Validate(labels.Reaction); err != nil {
		t.Fatalf("reaction (suites/reaction) is not in the vocabulary: %v", err)
	}
	err := labels.Validate(labels.Latency, "latancy", "needs:gpu")
	if err == nil || !strings.Contains(err.Error(), "latancy, needs:gpu") {
		t.Fatalf("got %v, want both unknown labels named", err)
	}
	if c, ok := labels.Capability(labels.NeedsScope); !ok || c != "scope" {
		t.Fatalf("Capability(needs:scope) = %q, %v", c, ok)
	}
	// needs:hardware needs the rack capability hardware-gpio: one table
	// (fixtures') answers, not the label's suffix.
	if c, ok := labels.Capability(labels.NeedsHardware); !ok || c != "hardware-gpio" {
		t.Fatalf("Capability(needs:hardware) = %q, %v; want hardware-gpio", c, ok)
	}
	if _, ok := labels.Capability(labels.Soak); ok {
		t.Fatal("soak is not a capability")
	}
}
