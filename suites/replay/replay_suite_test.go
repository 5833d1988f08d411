package replay_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestReplay(t *testing.T) { harness.RunSuite(t, "replay") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
