package reportcli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/safefile/safefiletest"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/store/storetest"
)

// TestHTMLAndImportRefuseUnboundedInput: `hilrig report html` and `hilrig
// report import` read only regular files, of bounded size: /dev/zero used
// to be read until out of memory and a FIFO blocked for ever, given as the
// input or as the result's soak_checkpoint. An imported result with a
// negative count is refused, naming the field.
func TestHTMLAndImportRefuseUnboundedInput(t *testing.T) {
	dir := t.TempDir()
	fifo := safefiletest.FIFO(t, dir, "fifo.json")
	zeroSoak := storetest.Run("sim", 1, 1, 1000)
	zeroSoak.SoakCheckpoint = "/dev/zero"
	zeroSoakFile := filepath.Join(dir, "zero-soak.json")
	if err := zeroSoak.WriteFile(zeroSoakFile); err != nil {
		t.Fatal(err)
	}
	negative := storetest.Run("sim", 2, 1, 1000)
	negative.Cases[0].Lost = -5
	negativeFile := filepath.Join(dir, "negative.json")
	if err := negative.WriteFile(negativeFile); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"html", "/dev/zero"}, "/dev/zero: not a regular file (a character device)"},
		{[]string{"html", fifo}, "not a regular file (a named pipe)"},
		{[]string{"html", zeroSoakFile, "-o", filepath.Join(dir, "z.html")}, "/dev/zero: not a regular file"},
		{[]string{"import", "/dev/zero"}, "/dev/zero: not a regular file (a character device)"},
		{[]string{"import", fifo}, "not a regular file (a named pipe)"},
		{[]string{"import", zeroSoakFile}, "soak windows not: soak: read checkpoint: /dev/zero: not a regular file"},
		{[]string{"import", negativeFile}, "cases[0].lost is -5"},
	} {
		t.Run(c.args[0]+" "+filepath.Base(c.args[1]), func(t *testing.T) {
			var out, errb bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- reportcli.RunWith(context.Background(), reportcli.Options{ReportDir: dir}, c.args, &out, &errb)
			}()
			select {
			case err := <-done:
				if got := errString(err) + "\n" + errb.String(); err == nil || !strings.Contains(got, c.want) {
					t.Errorf("report %s: %v (stderr %q), want an error with %q", strings.Join(c.args, " "), err, errb.String(), c.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("report %s still running after 30 s", strings.Join(c.args, " "))
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
