package fanout_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestFanout(t *testing.T) { harness.RunSuite(t, "fanout") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
