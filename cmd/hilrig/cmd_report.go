package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/reportcli"
)

// runReport is the "hilrig report" sub-command (html, compare, import,
// trend); the logic lives in report/reportcli. The results store and
// report_dir default to those of the run configuration (ginkgo.config, as
// the suites find it: $HILRIG_CONFIG or walking up from the working
// directory); with no configuration the defaults are out/report and its
// results.db. Usage mistakes exit 2 and a regression verdict 3 (main).
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := reportcli.Options{Version: Version()}
	if p, err := fixtures.ResolveConfigPath("", "."); err == nil {
		cfg, err := fixtures.LoadConfig(p)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		o.Results, o.ReportDir = cfg.ResultsDSN(), cfg.RelPath(cfg.ReportDir)
	}
	return reportcli.RunWith(ctx, o, args, stdout, stderr)
}
