// Package harness is what every hilrig Ginkgo suite shares: it loads the
// run configuration (ginkgo.config) and the rack fixture, ANDs the rack's
// capability label filter into Ginkgo's suite configuration, opens the rig
// for a suite, carries every measured case from the spec that measured it
// to the report (as a Ginkgo report entry, so cases survive `ginkgo -p`),
// and, in ReportAfterSuite, writes the versioned JSON result of the suite,
// merges it with the other suite packages of the same `ginkgo -r` run and
// regenerates the self-contained HTML report.
//
// The harness registers one Ginkgo node itself: [RunSuite] adds the
// suite's SynchronizedBeforeSuite, the health gate (the cheap preflight
// checks of [CheckHealth], once per suite binary). A suite's thin
// <area>_suite_test.go calls [RunSuite] and registers [WriteReport] with
// ReportAfterSuite. Helpers here return errors; only specs assert.
//
// Layout of the report directory (report_dir in ginkgo.config):
//
//	report_dir/index.html            the latest run's HTML report (all suites)
//	report_dir/result.json           the latest run's merged result
//	report_dir/runs/<run>/<suite>.json   one result per suite package
//	report_dir/runs/<run>/result.json    merged result of the run
//	report_dir/runs/<run>/index.html     HTML report of the run
//	report_dir/runs/<run>/junit-<suite>.xml, ginkgo-<suite>.json
//	                                     Ginkgo's own reports (unless
//	                                     --junit-report/--json-report given)
//
// A run is one `ginkgo -r` (or `go test`) invocation: every suite binary
// it starts shares the parent process, whose pid and start time name the
// run (override with $HILRIG_RUN_ID).
package harness
