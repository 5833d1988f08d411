package deploy

import (
	"io"
	"sync"

	"github.com/hilrig/hilrig/internal/tailbuf"
)

// Attach makes a Process of an agent the caller started by other means
// (rig's virtual boards: the agent runs inside a QEMU machine and
// its stdin/stdout are a virtio-serial channel). where describes it for
// messages; kill stops it (Process.Kill calls it at most once, and not
// after exited). The caller sets Stdin and Stdout before handing the
// Process out, writes the agent's diagnostics (e.g. the board console) to
// stderr — Process.Stderr returns the last 64 KiB — and calls exited
// exactly once, with the exit error, when the agent can no longer run.
// PID stays 0: there is no local agent process to signal. Does not block.
func Attach(where string, kill func() error) (p *Process, stderr io.Writer, exited func(error)) {
	p = &Process{Where: where, stderr: tailbuf.New(64 << 10), done: make(chan struct{}), kill: kill}
	var once sync.Once
	return p, p.stderr, func(err error) {
		once.Do(func() {
			p.waitErr = err
			close(p.done)
		})
	}
}
