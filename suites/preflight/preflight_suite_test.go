package preflight_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestPreflight(t *testing.T) { harness.RunSuite(t, "preflight") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
