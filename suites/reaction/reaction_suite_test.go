package reaction_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

func TestReaction(t *testing.T) { harness.RunSuite(t, "reaction") }

var _ = ReportAfterSuite("hilrig report", harness.WriteReport)
