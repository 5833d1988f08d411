package middleware_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
)

// TestMain fails the run when a test leaves goroutines behind.
func TestMain(m *testing.M) { testkit.Main(m) }
