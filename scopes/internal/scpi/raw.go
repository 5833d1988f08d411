package scpi

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// rawTransport is SCPI over a plain TCP socket: newline-terminated
// messages, no END marker, no device clear.
type rawTransport struct{ c net.Conn }

func (r *rawTransport) write(p []byte, dl time.Time) error {
	if err := r.c.SetWriteDeadline(dl); err != nil {
		return err
	}
	_, err := r.c.Write(p)
	return err
}

func (r *rawTransport) read(p []byte, dl time.Time) (int, bool, error) {
	if err := r.c.SetReadDeadline(dl); err != nil {
		return 0, false, err
	}
	n, err := r.c.Read(p)
	return n, false, err
}

func (r *rawTransport) clear(time.Time) error { return nil }
func (r *rawTransport) interrupt()            { _ = r.c.SetDeadline(time.Unix(1, 0)) }
func (r *rawTransport) close() error          { return r.c.Close() }

// WithPort returns addr with port appended when addr has none.
func WithPort(addr string, port int) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

// DialRaw connects to a raw SCPI socket at addr ("host:port"). It blocks
// until connected, ctx ends or Options.Timeout passes.
func DialRaw(ctx context.Context, addr string, o Options) (*Conn, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial scope %s: %w", addr, err)
	}
	return newConn(&rawTransport{c: nc}, addr, o), nil
}
