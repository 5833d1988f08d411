package latency_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestLatency(t *testing.T) { harness.RunSuite(t, "latency") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
