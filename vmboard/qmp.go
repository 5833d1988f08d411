package vmboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// QMP runs one QEMU Machine Protocol command on the board's monitor
// socket (connect, read the greeting, qmp_capabilities, the command) and
// returns its "return" value. Asynchronous events are skipped. Blocks
// until QEMU answers or ctx ends. Safe for concurrent use (one connection
// per call; QEMU serves one monitor client at a time, so calls queue).
//
// What power control uses: "stop"/"cont" freeze and thaw the guest (a
// hung board without killing it), "query-status" reads it back, "quit"
// ends QEMU (the board's power off). "system_reset" under -no-reboot
// makes QEMU exit as well: a reset board is restarted by its owner.
func (b *Board) QMP(ctx context.Context, command string) (json.RawMessage, error) {
	return QMPAt(ctx, b.qmpSock, command)
}

// QMPSocket is the board's QMP monitor socket (for [QMPAt] from another
// process).
func (b *Board) QMPSocket() string { return b.qmpSock }

// PID is the QEMU process's id (0 before it started).
func (b *Board) PID() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// QMPAt is [Board.QMP] on the QMP socket sock of a QEMU this process did
// not start. Blocks until QEMU answers or ctx ends.
func QMPAt(ctx context.Context, sock, command string) (json.RawMessage, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("vmboard: qmp %s: %w", command, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	r := bufio.NewReader(c)
	type reply struct {
		QMP    json.RawMessage `json:"QMP"`
		Return json.RawMessage `json:"return"`
		Error  *struct {
			Class string `json:"class"`
			Desc  string `json:"desc"`
		} `json:"error"`
		Event string `json:"event"`
	}
	read := func() (reply, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return reply{}, err
			}
			var m reply
			if err := json.Unmarshal(line, &m); err != nil {
				return reply{}, fmt.Errorf("not QMP: %w: %.200s", err, line)
			}
			if m.Event != "" || m.QMP != nil {
				continue // greeting and asynchronous events
			}
			if m.Error != nil {
				return m, fmt.Errorf("%s: %s", m.Error.Class, m.Error.Desc)
			}
			return m, nil
		}
	}
	exec := func(cmd string) (json.RawMessage, error) {
		if _, err := fmt.Fprintf(c, "{\"execute\":%q}\n", cmd); err != nil {
			return nil, err
		}
		m, err := read()
		return m.Return, err
	}
	if _, err := exec("qmp_capabilities"); err != nil {
		return nil, fmt.Errorf("vmboard: qmp handshake: %w", err)
	}
	ret, err := exec(command)
	if err != nil {
		return nil, fmt.Errorf("vmboard: qmp %s: %w", command, err)
	}
	return ret, nil
}

// Status is QMP query-status: "running", "paused", "shutdown", ...
func (b *Board) Status(ctx context.Context) (string, error) {
	raw, err := b.QMP(ctx, "query-status")
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("vmboard: query-status: %w", err)
	}
	return s.Status, nil
}
