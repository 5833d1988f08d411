package throughput_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestThroughput(t *testing.T) { harness.RunSuite(t, "throughput") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
