//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// stdoutSplitArg makes this test binary the child of TestProtocolStdout.
const stdoutSplitArg = "stdout-split"

// stdoutSplitChild writes as a peer library does (straight to fd 1) and
// as the agent does (to the protocol file), after protocolStdout.
func stdoutSplitChild() int {
	p, err := protocolStdout()
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	syscall.Write(1, []byte("\x1b[31m2026-12-02 [RTPS Warning] a library's line\x1b[0m\n"))
	os.Stdout.WriteString("a Go print\n")
	p.WriteString(`{"kind":"hello"}` + "\n")
	return 0
}

// TestProtocolStdout: after protocolStdout, what the peers' libraries
// print to stdout goes to stderr and the protocol stream holds only what
// the agent wrote. Before, a Fast DDS warning in colour landed in the
// protocol and ended the agent ("invalid character '\x1b'").
func TestProtocolStdout(t *testing.T) {
	cmd := exec.Command(os.Args[0], stdoutSplitArg)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v (%s)", err, errb.String())
	}
	if got := out.String(); got != `{"kind":"hello"}`+"\n" {
		t.Errorf("protocol stream %q, want the agent's line alone", got)
	}
	if e := errb.String(); !bytes.Contains([]byte(e), []byte("RTPS Warning")) || !bytes.Contains([]byte(e), []byte("a Go print")) {
		t.Errorf("stderr %q, want the library's line and the Go print", e)
	}
}
