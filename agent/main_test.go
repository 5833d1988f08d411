package agent_test

import (
	"github.com/hilrig/hilrig/agent"
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/tracing/tracetest"
)

// TestMain fails the run when a test leaves goroutines behind. A test
// binary re-executed as the spike hog (tracetest.StartHog) runs it and
// exits instead.
func TestMain(m *testing.M) {
	tracetest.RunHogIfChild()
	testkit.MainWith(m, agent.SetUpPeers)
}
