package steps

import (
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/harness"
)

// OpenTimeout bounds Setup's BeforeAll: opening the rack, and building
// hilrig when RunSuite did not.
const OpenTimeout = 5 * time.Minute

// Setup is the set-up every rig-driving suite shares. Called in the body
// of an Ordered container, it registers the BeforeAll that opens the
// suite's rig (Open with labels, failing the container when the rack does
// not open), the rig's cleanup right after, and the rig diagnostics
// attached to the report of a failed spec (run before the cleanup, while
// the agents still exist). It returns the Env the specs use; it is filled
// when the BeforeAll has run, so dereference it only inside specs.
func Setup(labels ...string) *Env {
	env := &Env{}
	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		tc := harness.Context()
		opened, err := Open(ctx, tc, labels...)
		if err != nil {
			ginkgo.Fail("open rack " + tc.Rack.Name + ": " + err.Error())
		}
		*env = *opened
		ginkgo.DeferCleanup(env.Rig.Close)
		harness.OnFailure("rig diagnostics", func() string { return Diagnostics(env) })
	}, ginkgo.NodeTimeout(OpenTimeout))
	return env
}
