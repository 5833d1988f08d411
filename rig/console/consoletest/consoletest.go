// Package consoletest is the test kit for board serial consoles: a
// pseudo-terminal standing in for a board's console (the board side writes
// into its master; the capture opens the slave by path, as a serial
// device), and a one-board rack that names it. Tests only: it takes a
// testing.TB and fails the test on a set-up error.
package consoletest

import (
	"fmt"
	"os"
	"testing"

	"github.com/creack/pty"

	"github.com/hilrig/hilrig/fixtures"
)

// Pty is a pseudo-terminal standing in for a board's serial console.
type Pty struct {
	// Master is the board side: what a test writes here arrives at the
	// console capture as the board's output.
	Master *os.File
	// Device is the slave's path (/dev/pts/N), the fixture's console
	// device.
	Device string
	tty    *os.File
}

// New opens a pty. Both ends are closed when the test ends.
func New(t testing.TB) *Pty {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return &Pty{Master: ptmx, Device: tty.Name(), tty: tty}
}

// CloseSlave closes the test's own handle on the slave, so that only the
// capture (which opens Device by path) holds it. Close may be called again
// at clean-up; the error of that second Close is ignored.
func (p *Pty) CloseSlave() { p.tty.Close() }

// Write writes line and a CR LF into the master, as a board's console
// prints a line.
func (p *Pty) Write(line string) { fmt.Fprint(p.Master, line+"\r\n") }

// Rack is the rack "c" with one board, "dut", reached locally, whose
// console is the pty.
func (p *Pty) Rack(t testing.TB) *fixtures.Rack {
	t.Helper()
	rack, err := fixtures.ParseRack("c.yaml", []byte(fmt.Sprintf("name: c\nboards:\n  - name: dut\n    reach: local\n    console: {device: %s}\n", p.Device)))
	if err != nil {
		t.Fatal(err)
	}
	return rack
}
