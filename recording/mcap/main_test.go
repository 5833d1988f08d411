package mcap_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
)

// The codecs' decoders and encoders start no goroutine that outlives a
// reader's or writer's Close.
func TestMain(m *testing.M) { testkit.Main(m) }
