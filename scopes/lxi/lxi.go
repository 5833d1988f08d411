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
	"regexp"
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

// family is one model family a driver supports, recognised from *IDN?.
type family struct {
	// name is how errors and docs call it ("Rigol MSO5000").
	name string
	// vendor matches the *IDN? manufacturer field (upper-cased).
	vendor *regexp.Regexp
	// model matches the *IDN? model field (upper-cased).
	model *regexp.Regexp
}

func (f family) matches(id scopes.Identity) bool {
	return f.vendor.MatchString(strings.ToUpper(id.Vendor)) && f.model.MatchString(strings.ToUpper(id.Model))
}

// Families each driver supports, from the *IDN? formats in their
// programming guides (manufacturer, model, serial, firmware).
var (
	tekFamilies = []family{{name: "Tektronix 4/5/6 Series MSO (MSO44/46, MSO54/56/58, MSO64, LPD64; B variants)",
		vendor: regexp.MustCompile(`^TEKTRONIX$`), model: regexp.MustCompile(`^(MSO4[46]B?|MSO5[468](B|LP)?|MSO6[468]B?|LPD64)$`)}}
	keysightFamilies = []family{{name: "Keysight InfiniiVision 3000 X / 4000 X (DSOX3xxx, MSOX3xxx, DSOX4xxx, MSOX4xxx; Agilent DSO-X 3xxxA, 4xxxA)",
		vendor: regexp.MustCompile(`^(KEYSIGHT|AGILENT) TECHNOLOGIES$`), model: regexp.MustCompile(`^(DSO|MSO)-?X ?[34](01|02|03|05|10|15)[24][ATG]?$`)}}
	rigolDS1000Z = family{name: "Rigol DS1000Z (DS1xx4Z, DS1xx4Z Plus)",
		vendor: regexp.MustCompile(`^RIGOL TECHNOLOGIES$`), model: regexp.MustCompile(`^(DS|MSO)1(05|07|10)4Z(-S)?( PLUS)?$`)}
	rigolMSO5000 = family{name: "Rigol MSO5000 (MSO5xx2, MSO5xx4)",
		vendor: regexp.MustCompile(`^RIGOL TECHNOLOGIES$`), model: regexp.MustCompile(`^MSO5\d{3}$`)}
	rigolDHO = family{name: "Rigol DHO800/DHO900 (DHO8xx, DHO9xx, DHO9xxS)",
		vendor: regexp.MustCompile(`^RIGOL TECHNOLOGIES$`), model: regexp.MustCompile(`^DHO[89]\d{2}S?$`)}
	rigolFamilies   = []family{rigolDS1000Z, rigolMSO5000, rigolDHO}
	siglentFamilies = []family{{name: "Siglent SDS2000X Plus (SDS2xx4X Plus)",
		vendor: regexp.MustCompile(`^SIGLENT TECHNOLOGIES$`), model: regexp.MustCompile(`^SDS2(10|20|35|50)[24]X PLUS$`)}}
	driverFamilies = []struct {
		driver   string
		families []family
	}{{"tek", tekFamilies}, {"keysight", keysightFamilies}, {"rigol", rigolFamilies}, {"siglent", siglentFamilies}}
)

// DriverFor returns the driver ("tek", "keysight", "rigol", "siglent")
// and model family that support the instrument identified by id, or an
// error wrapping [scopes.ErrWrongInstrument] naming what answered and
// every supported family.
func DriverFor(id scopes.Identity) (driver, familyName string, err error) {
	var all []string
	for _, d := range driverFamilies {
		for _, f := range d.families {
			if f.matches(id) {
				return d.driver, f.name, nil
			}
			all = append(all, f.name)
		}
	}
	return "", "", fmt.Errorf("%w: *IDN? %q (vendor %q, model %q) is none of the supported families: %s",
		scopes.ErrWrongInstrument, id.Raw, id.Vendor, id.Model, strings.Join(all, "; "))
}

// Probe connects as o says (o.Driver only picks the default port; empty
// means o.Addr must carry a port), asks *IDN? and disconnects, checking
// nothing: for finding which driver to use. It blocks until done.
func Probe(ctx context.Context, o Options) (scopes.Identity, error) {
	c, err := dial(ctx, strings.ToLower(o.Driver), o)
	if err != nil {
		return scopes.Identity{}, err
	}
	defer c.Close()
	s, err := c.Query(ctx, "*IDN?")
	if err != nil {
		return scopes.Identity{}, fmt.Errorf("identify: %w", err)
	}
	return parseIDNReply(s), nil
}

// base holds what every SCPI driver shares.
type base struct {
	c   *scpi.Conn
	cfg *scopes.DelayConfig
	// id is the *IDN? answer checked when the driver connected.
	id scopes.Identity
	// fam is the supported family id matched.
	fam family
	// span is the horizontal span (s) the timebase showed at
	// ConfigureDelay: no delay the instrument measures can exceed it.
	span float64
	// resetSent and resetAcked bracket the last statistics reset
	// (monotonic clock); zero before one.
	resetSent, resetAcked time.Time
}

// resetStats is ResetStats of every driver: ErrNotConfigured before
// ConfigureDelay, else reset with the vendor's command cmd, errors named
// vendor. It blocks on instrument I/O.
func (b *base) resetStats(ctx context.Context, vendor, cmd string) error {
	if b.cfg == nil {
		return scopes.ErrNotConfigured
	}
	if err := b.reset(ctx, cmd); err != nil {
		return fmt.Errorf("%s reset: %w", vendor, err)
	}
	return nil
}

// frozenStats is ReadStats of the drivers that query one statistic at a
// time: with acquisition frozen by f, it queries prefix+fields[i] for the
// mean, minimum, maximum and standard deviation (i = 0..3) and the count
// (4), then checks there is a result and that it is plausible. Errors
// are named vendor; a missing result returns the stats read with
// [scopes.ErrNoResult]. It blocks on instrument I/O.
func (b *base) frozenStats(ctx context.Context, vendor string, f freezer, window scopes.Window, prefix string, fields [5]string) (scopes.Stats, error) {
	st := scopes.Stats{Window: window, Snapshot: scopes.SnapshotFrozen}
	var raw fieldReplies
	el, err := b.frozen(ctx, f, func() error {
		var err error
		for _, q := range []struct {
			field string
			v     *scopes.Value
			raw   *string
		}{{fields[0], &st.Mean, &raw.mean}, {fields[1], &st.Min, &raw.min}, {fields[2], &st.Max, &raw.max}, {fields[3], &st.StdDev, &raw.stddev}} {
			if *q.v, err = b.stat(ctx, prefix+q.field, q.raw); err != nil {
				return err
			}
		}
		st.Count, err = b.count(ctx, prefix+fields[4], &raw.count)
		return err
	})
	if err != nil {
		return scopes.Stats{}, fmt.Errorf("%s stats: %w", vendor, err)
	}
	st.Elapsed = el
	if err := st.CheckResult(prefix + fields[0]); err != nil {
		return st, fmt.Errorf("%s stats: %w", vendor, err)
	}
	if err := b.plausible(st, raw.of); err != nil {
		return scopes.Stats{}, fmt.Errorf("%s stats: %w", vendor, err)
	}
	return st, nil
}

// reset sends cmd (the vendor's statistics reset) and waits for *OPC?,
// recording when it was sent and acknowledged for [scopes.Elapsed].
func (b *base) reset(ctx context.Context, cmd string) error {
	b.resetSent, b.resetAcked = time.Time{}, time.Time{}
	sent := time.Now()
	if err := b.c.Write(ctx, cmd); err != nil {
		return err
	}
	if _, err := b.c.Query(ctx, "*OPC?"); err != nil {
		return err
	}
	b.resetSent, b.resetAcked = sent, time.Now()
	return nil
}

// elapsed is the Elapsed of figures asked at asked and acknowledged at
// acked since the last reset.
func (b *base) elapsed(asked, acked time.Time) scopes.Elapsed {
	return scopes.ElapsedBetween(b.resetSent, b.resetAcked, asked, acked)
}

// checkIdentity asks *IDN? and keeps the family it matches among fams;
// otherwise the error wraps [scopes.ErrWrongInstrument] and names what
// answered and what the driver supports. Every driver calls it before
// sending anything that configures the instrument.
func (b *base) checkIdentity(ctx context.Context, driver string, fams []family) error {
	id, err := b.Identify(ctx)
	if err != nil {
		return fmt.Errorf("%s driver: %w", driver, err)
	}
	for _, f := range fams {
		if f.matches(id) {
			b.id, b.fam = id, f
			return nil
		}
	}
	names := make([]string, len(fams))
	for i, f := range fams {
		names[i] = f.name
	}
	hint := ""
	if d, _, err := DriverFor(id); err == nil {
		hint = fmt.Sprintf(" (the %s driver supports it)", d)
	}
	return fmt.Errorf("%w: %s driver at %s: *IDN? answered %q (vendor %q, model %q); this driver supports %s%s",
		scopes.ErrWrongInstrument, driver, b.c.Addr(), id.Raw, id.Vendor, id.Model, strings.Join(names, "; "), hint)
}

// open dials for driver and checks the identity against fams, closing the
// connection on failure.
func open(ctx context.Context, driver string, o Options, fams []family) (base, error) {
	c, err := dial(ctx, driver, o)
	if err != nil {
		return base{}, err
	}
	b := base{c: c}
	if err := b.checkIdentity(ctx, driver, fams); err != nil {
		c.Close()
		return base{}, err
	}
	return b, nil
}

// configure sends each command and checks the instrument's error report
// after it, so an error names the command that caused it. A command
// whose send or check met a timeout or garbage is sent again (see
// [retry]): every configuration command is a setting, so sending it
// twice is harmless.
func (b *base) configure(ctx context.Context, check func(ctx context.Context, after string) error, cmds ...string) error {
	for _, cmd := range cmds {
		if err := retry(ctx, func() error { return b.configureOnce(ctx, check, cmd) }); err != nil {
			return err
		}
	}
	return nil
}

// configureOnce is configure without the retry, for a group of commands
// that only make sense sent together from the first (Tektronix
// DELETEALL + ADDMEAS: a second ADDMEAS alone is refused).
func (b *base) configureOnce(ctx context.Context, check func(ctx context.Context, after string) error, cmds ...string) error {
	for _, cmd := range cmds {
		if err := b.c.Write(ctx, cmd); err != nil {
			return err
		}
		if err := check(ctx, cmd); err != nil {
			return err
		}
	}
	return nil
}

// configAttempts bounds how often one configuration step is tried.
const configAttempts = 3

// retry runs step until it succeeds, fails with something other than a
// transport fault ([scopes.ErrTimeout], [scopes.ErrGarbage]), ctx ends,
// or configAttempts tries are spent. The connection resynchronises before
// each new try. Configuration spends one error-queue reply per command
// (Tektronix ten), so a link that garbles every 10th reply met one in
// every whole attempt: retrying the step that met it is what makes
// progress. Reads are not retried: a failed read is reported as such.
func retry(ctx context.Context, step func() error) error {
	var err error
	for range configAttempts {
		if err = step(); err == nil || ctx.Err() != nil ||
			!errors.Is(err, scopes.ErrTimeout) && !errors.Is(err, scopes.ErrGarbage) {
			return err
		}
	}
	return err
}

// freezer stops acquisition for a read: state is the query telling
// whether the instrument is acquiring, stopped reports whether its reply
// means stopped, stop and run are the commands.
type freezer struct {
	state, stop, run string
	stopped          func(reply string) bool
}

// restoreTimeout bounds restarting acquisition after a frozen read, even
// when the caller's ctx has ended: leaving a lab's scope stopped is worse
// than a late return.
const restoreTimeout = 5 * time.Second

// frozen runs read with acquisition stopped (when it was running) and
// restarts it afterwards, so every figure read comes from the same
// acquisitions, and returns the Elapsed since the last reset of the
// figures (from the stop; its Min is 0 when acquisition was already
// stopped, at an unknown time). It blocks on instrument I/O; a failed
// restart is joined to the error.
func (b *base) frozen(ctx context.Context, f freezer, read func() error) (el scopes.Elapsed, err error) {
	asked := time.Now()
	st, err := b.c.Query(ctx, f.state)
	if err != nil {
		return el, fmt.Errorf("acquisition state: %w", err)
	}
	if f.stopped(strings.TrimSpace(st)) {
		el = b.elapsed(asked, time.Now())
		el.Min = 0
		return el, read()
	}
	asked = time.Now()
	if err := b.c.Write(ctx, f.stop); err != nil {
		return el, fmt.Errorf("freeze acquisition: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
		defer cancel()
		rerr := b.c.Write(rctx, f.run)
		if rerr == nil {
			// Return only once the instrument has taken the restart.
			_, rerr = b.c.Query(rctx, "*OPC?")
		}
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("restart acquisition (%s): %w", f.run, rerr))
		}
	}()
	// *OPC? waits until the stop has taken effect.
	if _, err := b.c.Query(ctx, "*OPC?"); err != nil {
		return el, fmt.Errorf("freeze acquisition: %w", err)
	}
	return b.elapsed(asked, time.Now()), read()
}

// Close ends the session; a second Close returns [scopes.ErrClosed].
func (b *base) Close() error { return b.c.Close() }

// Identify sends *IDN? and parses the reply. It blocks on instrument I/O.
func (b *base) Identify(ctx context.Context) (scopes.Identity, error) {
	s, err := b.c.Query(ctx, "*IDN?")
	if err != nil {
		return scopes.Identity{}, fmt.Errorf("identify: %w", err)
	}
	return parseIDNReply(s), nil
}

// parseIDNReply parses an *IDN? reply; a Tektronix before HEADer OFF may
// echo the header (":*IDN TEK…").
func parseIDNReply(s string) scopes.Identity {
	return scopes.ParseIDN(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), ":"), "*IDN "))
}

func (b *base) writeAll(ctx context.Context, cmds ...string) error {
	for _, cmd := range cmds {
		if err := b.c.Write(ctx, cmd); err != nil {
			return err
		}
	}
	return nil
}

// readSpan reads the timebase with query into b.span: the reply times
// divisions (the screen's horizontal divisions; 1 when the query returns
// the whole span). It is a configuration step (retried like one).
func (b *base) readSpan(ctx context.Context, query string, divisions float64) error {
	return retry(ctx, func() error {
		r, err := b.c.Query(ctx, query)
		if err != nil {
			return err
		}
		v, err := scpi.ParseNumber(r)
		if err != nil || !(v > 0) || scpi.IsNoMeasurement(v) {
			b.c.Invalidate()
			return fmt.Errorf("timebase %s = %q: %w: not a positive time", query, clipS(r), scopes.ErrGarbage)
		}
		b.span = v * divisions
		return nil
	})
}

// plausible refuses st when [scopes.Stats.CheckPlausible] does, against
// the span read at ConfigureDelay; reply names the query and reply that
// carried a field ("mean", "min", …).
func (b *base) plausible(st scopes.Stats, reply func(field string) string) error {
	err := st.CheckPlausible(b.span)
	var ie *scopes.ImplausibleError
	if errors.As(err, &ie) {
		ie.Reply = reply(ie.Field)
	}
	return err
}

// stat queries one statistic, keeping the reply in *raw as "cmd → reply"
// for error messages; garbage invalidates the session.
func (b *base) stat(ctx context.Context, cmd string, raw *string) (scopes.Value, error) {
	s, err := b.c.Query(ctx, cmd)
	if err != nil {
		return scopes.Value{}, err
	}
	*raw = cmd + " → " + clipS(s)
	v, err := scpi.ParseStat(s)
	if err != nil {
		b.c.Invalidate()
		return scopes.Value{}, fmt.Errorf("%s: %w", cmd, err)
	}
	return v, nil
}

func (b *base) count(ctx context.Context, cmd string, raw *string) (scopes.Count, error) {
	s, err := b.c.Query(ctx, cmd)
	if err != nil {
		return scopes.Count{}, err
	}
	*raw = cmd + " → " + clipS(s)
	v, err := scpi.ParseCount(s)
	if err != nil {
		b.c.Invalidate()
		return scopes.Count{}, fmt.Errorf("%s: %w", cmd, err)
	}
	return v, nil
}

// systemErrors drains a SCPI error queue with :SYSTem:ERRor? until code 0
// and returns every entry as an [*scopes.InstrumentError] (joined), each
// naming after (the command just sent).
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

// fieldReplies keeps the "query → reply" behind each statistic of one
// read, so a refusal names the reply.
type fieldReplies struct{ mean, min, max, stddev, count string }

// of returns the reply behind field ("mean", "min", "max", "stddev",
// "count").
func (r *fieldReplies) of(field string) string {
	switch field {
	case "mean":
		return r.mean
	case "min":
		return r.min
	case "max":
		return r.max
	case "stddev":
		return r.stddev
	}
	return r.count
}
