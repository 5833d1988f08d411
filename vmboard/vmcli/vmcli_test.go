package vmcli_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hilrig/hilrig/vmboard/vmcli"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"build", "-no-such-flag"},
		{"build", "extra"},
		{"run", "-net", "230.0.0.1:1234"},
		{"run", "-ip", "10.0.0.1/24"},
		{"build", "-arch", "riscv64"},
		{"run", "--arch", "x86"},
	} {
		var out, errb bytes.Buffer
		err := vmcli.Run(context.Background(), args, &out, &errb)
		if !errors.Is(err, vmcli.ErrUsage) {
			t.Errorf("Run(%q) = %v, want ErrUsage", args, err)
		}
	}
}

func TestBuildNamesMissingSource(t *testing.T) {
	var out, errb bytes.Buffer
	err := vmcli.Run(context.Background(), []string{"build", "-cache", t.TempDir(), "-kernel-source", "/nonexistent/linux.tar.xz"}, &out, &errb)
	if err == nil || errors.Is(err, vmcli.ErrUsage) || !bytes.Contains([]byte(err.Error()), []byte("/nonexistent/linux.tar.xz")) {
		t.Fatalf("err = %v, want an error naming the tarball", err)
	}
}
