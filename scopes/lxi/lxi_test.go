package lxi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
	"github.com/hilrig/hilrig/scopes/scopetest"
)

type simRig struct {
	srv      *scopesim.Server
	ch1, ch2 *scopesim.MemSource
	clock    int64
}

func startSim(t *testing.T, d scopesim.Dialect, idn string) *simRig {
	t.Helper()
	r := &simRig{ch1: scopesim.NewMemSource(), ch2: scopesim.NewMemSource(), clock: 1_000_000}
	srv, err := scopesim.Start(t.Context(), scopesim.Config{Dialect: d, IDN: idn, VXI11: true,
		Channels: map[int]scopesim.EdgeSource{1: r.ch1, 2: r.ch2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("sim close: %v", err)
		}
	})
	r.srv = srv
	return r
}

// feed pushes pulses and polls (with a deadline) until the sim holds them.
func (r *simRig) feed(ctx context.Context, delays []int64) error {
	i := 0
	snd, rcv := scopesim.Pulses(len(delays), r.clock, 1_000_000, 1_000, func(int) int64 { d := delays[i]; i++; return d })
	r.clock += int64(len(delays)+1) * 1_000_000
	want1, want2 := r.srv.EdgeCount(1)+len(snd), r.srv.EdgeCount(2)+len(rcv)
	r.ch1.Push(snd...)
	r.ch2.Push(rcv...)
	for r.srv.EdgeCount(1) < want1 || r.srv.EdgeCount(2) < want2 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sim never ingested the edges: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func driverFor(d scopesim.Dialect) string { return d.String() }

// caseName is the dialect, and the model when idn names one.
func caseName(d scopesim.Dialect, idn string) string {
	if idn == "" {
		return d.String()
	}
	return d.String() + "-" + scopes.ParseIDN(idn).Model
}

// measuring starts the simulator (idn as in startSim), opens its driver
// with the per-command timeout, configures a CH1→CH2 delay and feeds one
// pulse per delay (ns).
func measuring(t *testing.T, d scopesim.Dialect, idn string, timeout time.Duration, delays ...int64) (*simRig, lxi.Instrument) {
	t.Helper()
	r := startSim(t, d, idn)
	inst, err := lxi.Open(t.Context(), lxi.Options{Driver: d.String(), Addr: r.srv.Addr(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	if err := inst.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.feed(t.Context(), delays); err != nil {
		t.Fatal(err)
	}
	return r, inst
}

// Identities of the Rigol families besides the simulator's default MSO5074.
const (
	rigolDS1054Z = "RIGOL TECHNOLOGIES,DS1054Z,DS1ZSIM0001,00.04.04.SP4"
	rigolDHO924S = "RIGOL TECHNOLOGIES,DHO924S,DHO9SIM00001,00.01.02"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		dialect scopesim.Dialect
		idn     string
		noCount bool
		noLimit bool
		vxi11   bool
		chunk   int // replies in writes of at most chunk bytes
	}{
		{dialect: scopesim.Tek},
		{dialect: scopesim.Keysight},
		{dialect: scopesim.Rigol},
		{dialect: scopesim.Rigol, idn: rigolDS1054Z, noCount: true, noLimit: true},
		{dialect: scopesim.Rigol, idn: rigolDHO924S},
		{dialect: scopesim.Siglent},
		{dialect: scopesim.Tek, vxi11: true},
		{dialect: scopesim.Keysight, vxi11: true},
		{dialect: scopesim.Tek, chunk: 3},
		{dialect: scopesim.Keysight, chunk: 509}, // waveform blocks in ~2000 segments
	} {
		name := caseName(tc.dialect, tc.idn)
		if tc.vxi11 {
			name += "-vxi11"
		}
		if tc.chunk > 0 {
			name += fmt.Sprintf("-chunk%d", tc.chunk)
		}
		t.Run(name, func(t *testing.T) {
			scopetest.Run(t, func(t *testing.T) scopetest.Rig {
				r := startSim(t, tc.dialect, tc.idn)
				r.srv.SetReplyChunk(tc.chunk)
				addr := r.srv.Addr()
				if tc.vxi11 {
					addr = r.srv.PortmapperAddr()
				}
				inst, err := lxi.Open(t.Context(), lxi.Options{Driver: driverFor(tc.dialect), Addr: addr, VXI11: tc.vxi11, Timeout: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = inst.Close() })
				return scopetest.Rig{Scope: inst, Feed: r.feed, Source: 1, Dest: 2, NoCount: tc.noCount, NoPopulationLimit: tc.noLimit, NoWindow: tc.noCount}
			})
		})
	}
}

func openTek(t *testing.T) (*simRig, *lxi.Tek) {
	r := startSim(t, scopesim.Tek, "")
	tek := dialed(t, lxi.DialTek, lxi.Options{Addr: r.srv.Addr(), Timeout: 3 * time.Second})
	return r, tek
}

// The Tektronix driver must set both sources: the simulator, like the
// instrument, defaults SOUrce2 to SOUrce1.
func TestTekSetsBothSourcesAndHeadersOff(t *testing.T) {
	r, tek := openTek(t)
	if err := tek.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	cmds := strings.Join(r.srv.Commands(), "\n")
	for _, want := range []string{"HEADer OFF", "MEASUrement:MEAS1:SOUrce1 CH1", "MEASUrement:MEAS1:SOUrce2 CH2"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("driver never sent %q; sent:\n%s", want, cmds)
		}
	}
}

// rejectedConfigure starts the simulator for d, opens its driver, has
// the simulator refuse every command starting with prefix (code, text)
// and configures a CH1→CH2 delay; it fails t unless that returns an
// *InstrumentError, and returns the instrument, that error and the
// error as returned.
func rejectedConfigure(t *testing.T, d scopesim.Dialect, prefix string, code int, text string) (lxi.Instrument, *scopes.InstrumentError, error) {
	t.Helper()
	r := startSim(t, d, "")
	inst := openSim(t, r, d.String())
	r.srv.RejectCommand(prefix, code, text)
	err := inst.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2})
	var ie *scopes.InstrumentError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want an *InstrumentError", err)
	}
	return inst, ie, err
}

// A setting the instrument refuses must come back as an InstrumentError
// carrying the instrument's own text, whatever the vendor's error path
// (Tek *ESR?+ALLEv?, Keysight/Rigol :SYSTem:ERRor?, Siglent *ESR? bits).
func TestErrorQueuePropagation(t *testing.T) {
	for _, tc := range []struct {
		d      scopesim.Dialect
		prefix string
		code   int
		text   string
	}{
		{scopesim.Tek, "MEASUrement:MEAS1:SOUrce2", 221, "Settings conflict; CH2 is not displayed"},
		{scopesim.Keysight, ":MEASure:DELay", -221, "Settings conflict; channel 2 off"},
		{scopesim.Rigol, ":MEASure:STATistic:ITEM", -221, "Settings conflict"},
		{scopesim.Siglent, ":MEASure:ADVanced:P1:SOURce2", 0, ""},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			inst, ie, err := rejectedConfigure(t, tc.d, tc.prefix, tc.code, tc.text)
			if !errors.Is(err, scopes.ErrInstrument) {
				t.Fatalf("got %v, want it to match ErrInstrument", err)
			}
			if tc.d == scopesim.Siglent {
				if ie.Code != 16 {
					t.Fatalf("siglent error %+v, want the execution-error bit 16", ie)
				}
				return
			}
			if ie.Code != tc.code || ie.Text != tc.text {
				t.Fatalf("instrument error = %d %q, want %d %q (text preserved)", ie.Code, ie.Text, tc.code, tc.text)
			}
			// The failed configuration must not leave a usable measurement.
			if _, err := inst.ReadStats(t.Context()); !errors.Is(err, scopes.ErrNotConfigured) {
				t.Fatalf("ReadStats after failed configure: %v, want ErrNotConfigured", err)
			}
		})
	}
}

// Stale errors queued before configuration are cleared by *CLS on the
// SCPI-queue vendors and do not fail the next configuration.
func TestStaleErrorsCleared(t *testing.T) {
	r := startSim(t, scopesim.Keysight, "")
	inst := dialed(t, lxi.DialKeysight, lxi.Options{Addr: r.srv.Addr(), Timeout: time.Second})
	r.srv.QueueError(-100, "stale")
	if err := inst.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
}

func TestNoResultIsAnError(t *testing.T) {
	for _, d := range []scopesim.Dialect{scopesim.Tek, scopesim.Keysight, scopesim.Rigol, scopesim.Siglent} {
		t.Run(d.String(), func(t *testing.T) {
			r, inst := measuring(t, d, "", time.Second, 1000, 2000)
			r.srv.SetNoMeasurement(true)
			st, err := inst.ReadStats(t.Context())
			// "No result" is an error the caller cannot miss (the CLI
			// exited 0 printing every statistic as missing).
			if !errors.Is(err, scopes.ErrNoResult) {
				t.Fatalf("no-result values: err %v, want ErrNoResult", err)
			}
			if st.Mean.OK || st.Min.OK || st.Max.OK || st.StdDev.OK {
				t.Fatalf("stats = %v: a no-measurement value was taken as a latency", st)
			}
		})
	}
}

// A dropped reply times out; the next command resynchronises and gets its
// own answer, not a stale one.
func TestTimeoutThenResync(t *testing.T) {
	r, tek := openTek(t)
	if err := tek.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.feed(t.Context(), []int64{3000}); err != nil {
		t.Fatal(err)
	}
	r.srv.SetSlowReplies(500 * time.Millisecond) // longer than the 150 ms deadline below
	short, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	_, err := tek.Identify(short)
	if !errors.Is(err, scopes.ErrTimeout) {
		t.Fatalf("slow reply: got %v, want ErrTimeout", err)
	}
	r.srv.SetSlowReplies(0)
	// The late *IDN? reply arrives in the socket; the next query must not
	// read it as its own answer.
	st, err := tek.ReadStats(t.Context())
	if err != nil {
		t.Fatalf("after resync: %v", err)
	}
	if !st.Mean.OK || st.Mean.V < 2.9e-6 || st.Mean.V > 3.1e-6 {
		t.Fatalf("after resync mean = %v, want 3µs (a stale reply was read)", st.Mean)
	}
}

func TestGarbageThenResync(t *testing.T) {
	r, tek := openTek(t)
	r.srv.GarbageReplies(1)
	if _, err := tek.Identify(t.Context()); !errors.Is(err, scopes.ErrGarbage) {
		t.Fatalf("got %v, want ErrGarbage", err)
	}
	id, err := tek.Identify(t.Context())
	if err != nil || id.Vendor != "TEKTRONIX" {
		t.Fatalf("after garbage: %+v, %v", id, err)
	}
}

func TestDroppedReplyThenResync(t *testing.T) {
	r, tek := openTek(t)
	r.srv.DropReplies(1)
	short, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	if _, err := tek.Identify(short); !errors.Is(err, scopes.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	id, err := tek.Identify(t.Context())
	if err != nil || id.Model != "MSO54" {
		t.Fatalf("after dropped reply: %+v, %v", id, err)
	}
}

// Over VXI-11 a late reply is cleared by device_clear during resync.
func TestVXI11SlowReplyThenResync(t *testing.T) {
	r := startSim(t, scopesim.Keysight, "")
	ks := dialed(t, lxi.DialKeysight, lxi.Options{Addr: r.srv.PortmapperAddr(), VXI11: true, Timeout: 3 * time.Second})
	if err := ks.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.feed(t.Context(), []int64{4000}); err != nil {
		t.Fatal(err)
	}
	r.srv.SetSlowReplies(400 * time.Millisecond)
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := ks.Identify(short); !errors.Is(err, scopes.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	r.srv.SetSlowReplies(0)
	st, err := ks.ReadStats(t.Context())
	if err != nil {
		t.Fatalf("after resync: %v", err)
	}
	if !st.Mean.OK || st.Mean.V < 3.9e-6 || st.Mean.V > 4.1e-6 {
		t.Fatalf("after resync mean = %v, want 4µs (a stale reply was read)", st.Mean)
	}
}

// statsReader is the part of a driver feedRead uses.
type statsReader interface {
	ReadStats(ctx context.Context) (scopes.Stats, error)
}

// feedRead feeds the pulses' delays (ns) to the simulator and reads the
// statistics, failing the test on either error.
func (r *simRig) feedRead(t *testing.T, inst statsReader, delays ...int64) scopes.Stats {
	t.Helper()
	if err := r.feed(t.Context(), delays); err != nil {
		t.Fatal(err)
	}
	st, err := inst.ReadStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// delayReset is the part of a driver configureReset uses.
type delayReset interface {
	ConfigureDelay(ctx context.Context, c scopes.DelayConfig) error
	ResetStats(ctx context.Context) error
}

// configureReset configures a CH1→CH2 delay and resets the statistics.
func configureReset(t *testing.T, inst delayReset) {
	t.Helper()
	if err := inst.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := inst.ResetStats(t.Context()); err != nil {
		t.Fatal(err)
	}
}
