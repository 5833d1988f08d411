package scope_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestScope(t *testing.T) { harness.RunSuite(t, "scope") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
