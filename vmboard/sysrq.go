package vmboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// muxEscape is QEMU's mux chardev escape character (Ctrl-A, the default
// of -echr); followed by 'b' it sends a BREAK to the frontend, the
// guest's UART (QEMU docs, "mux-chardev": "Ctrl-a b  Send break (magic
// sysrq in Linux)").
const muxEscape = 0x01

// SysRq sends the Magic SysRq key to the board's kernel over its serial
// console, as a lab engineer does on a terminal: a BREAK, then the key.
// The kernel (CONFIG_MAGIC_SYSRQ_SERIAL) takes the character following
// a BREAK within 5 s as a SysRq command: 'c' panics it (the console
// shows "sysrq: Trigger a crash" and "Kernel panic - not syncing: sysrq
// triggered crash"; with panic=-1 and -no-reboot QEMU then exits, and
// Wait returns ErrBoardCrashed), 'h' prints the help, 't' the tasks.
// It returns once QEMU has the bytes, not once the kernel acted: the
// caller watches the console for the effect. Blocks until written or ctx
// ends; safe for concurrent use.
func (b *Board) SysRq(ctx context.Context, key byte) error {
	if key < '0' || key > 'z' {
		return fmt.Errorf("%w: sysrq key %q", ErrInvalidOptions, key)
	}
	b.consoleMu.Lock()
	defer b.consoleMu.Unlock()
	// A frozen (SIGSTOPped) QEMU stops reading: the deadline ends the
	// write when ctx does (the pipe holds the 3 bytes anyway, so this
	// only matters for a pipe someone filled).
	stop := context.AfterFunc(ctx, func() { _ = b.consoleIn.SetWriteDeadline(time.Now()) })
	defer stop()
	_, err := b.consoleIn.Write([]byte{muxEscape, 'b', key})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("vmboard: sysrq %q: %w (its run was waited for)", key, ErrNotRunning)
	case errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("vmboard: sysrq %q: %w (QEMU closed its console input: exited)", key, ErrNotRunning)
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("vmboard: sysrq %q: %w", key, context.Cause(ctx))
	}
	return fmt.Errorf("vmboard: sysrq %q: writing QEMU's console input: %w", key, err)
}
