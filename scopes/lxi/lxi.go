// Package lxi holds the oscilloscope drivers that speak SCPI over LAN (a
// raw socket or VXI-11): [Tek], [Keysight], [Rigol] and [Siglent], each
// implementing [scopes.Scope] for the DELAY measurement with statistics.
// Each driver's doc comment cites the programmer manual sections of every
// command it sends.
package lxi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// Options select and tune a driver for [Open].
type Options struct {
	// Driver is "tek", "keysight", "rigol" or "siglent".
	Driver string
	// Addr is "host" or "host:port"; without a port the vendor's default
	// raw-socket port is used (Tektronix 4000, Keysight/Siglent 5025,
	// Rigol 5555). With VXI11 it is the host, or host:port of the
	// portmapper.
	Addr string
	// VXI11 selects VXI-11 (portmapper on 111) instead of a raw socket.
	VXI11 bool
	// Timeout bounds each command; default 5 s.
	Timeout time.Duration
	// Logger receives debug traces; nil discards.
	Logger *slog.Logger
}

// Instrument is a driver returned by [Open]: a [scopes.Scope] that must be
// closed.
type Instrument interface {
	scopes.Scope
	Close() error
}

// dial connects the transport chosen by o: a raw socket (vendor's default
// port when o.Addr has none) or VXI-11. It blocks until connected.
func dial(ctx context.Context, vendor string, o Options) (*scpi.Conn, error) {
	so := scpi.Options{Timeout: o.Timeout, Logger: o.Logger}
	if o.VXI11 {
		host, pm := o.Addr, ""
		if h, _, err := net.SplitHostPort(o.Addr); err == nil {
			host, pm = h, o.Addr
		}
		return scpi.DialVXI11(ctx, host, scpi.VXI11Options{Options: so, Portmapper: pm})
	}
	return scpi.DialRaw(ctx, scpi.WithPort(o.Addr, scpi.DefaultPort(vendor)), so)
}

// Open connects to the scope named by o.Driver. It blocks until connected.
func Open(ctx context.Context, o Options) (Instrument, error) {
	if o.Addr == "" {
		return nil, fmt.Errorf("%w: --addr is empty", scopes.ErrBadConfig)
	}
	switch strings.ToLower(o.Driver) {
	case "tek", "tektronix":
		return DialTek(ctx, o)
	case "keysight":
		return DialKeysight(ctx, o)
	case "rigol":
		return DialRigol(ctx, o)
	case "siglent":
		return DialSiglent(ctx, o)
	}
	return nil, fmt.Errorf("%w: unknown driver %q (want tek, keysight, rigol or siglent)", scopes.ErrBadConfig, o.Driver)
}

// base holds what every SCPI driver shares.
type base struct {
	c   *scpi.Conn
	cfg *scopes.DelayConfig
}

// Close ends the session; a second Close returns [scopes.ErrClosed].
func (b *base) Close() error { return b.c.Close() }

// Identify sends *IDN? and parses the reply. It blocks on instrument I/O.
func (b *base) Identify(ctx context.Context) (scopes.Identity, error) {
	s, err := b.c.Query(ctx, "*IDN?")
	if err != nil {
		return scopes.Identity{}, fmt.Errorf("identify: %w", err)
	}
	return scopes.ParseIDN(s), nil
}

func (b *base) writeAll(ctx context.Context, cmds ...string) error {
	for _, cmd := range cmds {
		if err := b.c.Write(ctx, cmd); err != nil {
			return err
		}
	}
	return nil
}

// stat queries one statistic; garbage invalidates the session.
func (b *base) stat(ctx context.Context, cmd string) (scopes.Value, error) {
	s, err := b.c.Query(ctx, cmd)
	if err != nil {
		return scopes.Value{}, err
	}
	v, err := scpi.ParseStat(s)
	if err != nil {
		b.c.Invalidate()
		return scopes.Value{}, fmt.Errorf("%s: %w", cmd, err)
	}
	return v, nil
}

func (b *base) count(ctx context.Context, cmd string) (scopes.Count, error) {
	s, err := b.c.Query(ctx, cmd)
	if err != nil {
		return scopes.Count{}, err
	}
	v, err := scpi.ParseCount(s)
	if err != nil {
		b.c.Invalidate()
		return scopes.Count{}, fmt.Errorf("%s: %w", cmd, err)
	}
	return v, nil
}

// systemErrors drains a SCPI error queue with :SYSTem:ERRor? until code 0
// and returns every entry as an [*scopes.InstrumentError] (joined).
func (b *base) systemErrors(ctx context.Context, after string) error {
	var errs []error
	for range 32 {
		s, err := b.c.Query(ctx, ":SYSTem:ERRor?")
		if err != nil {
			return err
		}
		code, text, err := scpi.ParseErrorEntry(s)
		if err != nil {
			b.c.Invalidate()
			return fmt.Errorf(":SYSTem:ERRor?: %w", err)
		}
		if code == 0 {
			break
		}
		errs = append(errs, &scopes.InstrumentError{Code: code, Text: text, After: after})
	}
	return errors.Join(errs...)
}
