package startup_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestStartup(t *testing.T) { harness.RunSuite(t, "startup") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
