package power_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/rig/power"
)

// switchFor parses a one-board rack with the given power block.
func switchFor(t *testing.T, block string) *power.Switch {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "rack.yaml")
	y := "name: p\nboards:\n  - name: dut\n    reach: local\n    power: " + block + "\n"
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := fixtures.LoadRack(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Board("dut")
	s, err := power.New(r, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCommandDriver(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "pdu.sh")
	// A PDU script: on/off write the state and log the call; status exits
	// 0 for on, 1 for off.
	src := `#!/bin/sh
echo "$1" >> ` + log + `
case "$1" in
on) echo on > ` + state + `;;
off) echo off > ` + state + `;;
status) grep -q on ` + state + `;;
fail) echo "relay 3 jammed" >&2; exit 7;;
esac
`
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	s := switchFor(t, fmt.Sprintf("{driver: command, on: [%s, on], off: [%s, off], status: [%s, status], off_time: 50ms}", script, script, script))
	ctx := context.Background()
	for _, tc := range []struct {
		op   func(context.Context) error
		want power.State
	}{{s.On, power.On}, {s.Off, power.Off}, {s.Cycle, power.On}} {
		if err := tc.op(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Status(ctx); err != nil || st != tc.want {
			t.Fatalf("status %v, %v; want %v", st, err, tc.want)
		}
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "on status off status off on status" {
		t.Errorf("calls %q: want on status off status off on status", got)
	}
	bad := switchFor(t, fmt.Sprintf("{driver: command, on: [%s, fail], off: [%s, off]}", script, script))
	err := bad.On(ctx)
	if !errors.Is(err, power.ErrPower) || !strings.Contains(err.Error(), "board dut") || !strings.Contains(err.Error(), "relay 3 jammed") {
		t.Errorf("failing command: %v", err)
	}
	if st, err := bad.Status(ctx); err != nil || st != power.Unknown {
		t.Errorf("status without a status command: %v, %v", st, err)
	}
}

// pdu is a loopback PDU speaking one protocol; it records the outlet state.
type pdu struct {
	mu    sync.Mutex
	on    map[int]bool
	calls []string
	auth  string // "user:password" expected, "" none
}

func (p *pdu) handler(t *testing.T, protocol string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, r.Method+" "+r.URL.RequestURI())
		if p.auth != "" && protocol != "tasmota" {
			u, pw, ok := r.BasicAuth()
			if !ok || u+":"+pw != p.auth {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		switch protocol {
		case "netio":
			if r.URL.Path != "/netio.json" {
				http.NotFound(w, r)
				return
			}
			if r.Method == http.MethodPost {
				var d struct{ Outputs []struct{ ID, Action int } }
				if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				for _, o := range d.Outputs {
					switch o.Action {
					case 0:
						p.on[o.ID] = false
					case 1:
						p.on[o.ID] = true
					}
				}
			}
			var out []map[string]any
			for id := 1; id <= 4; id++ {
				out = append(out, map[string]any{"ID": id, "Name": fmt.Sprintf("out_%d", id), "State": map[bool]int{true: 1, false: 0}[p.on[id]], "Action": 6, "Delay": 2020})
			}
			json.NewEncoder(w).Encode(map[string]any{"Agent": map[string]any{"Model": "NETIO 4All"}, "Outputs": out})
		case "tasmota":
			q := r.URL.Query()
			if p.auth != "" && q.Get("user")+":"+q.Get("password") != p.auth {
				json.NewEncoder(w).Encode(map[string]string{"WARNING": "Need user=<username>&password=<password>"})
				return
			}
			f := strings.Fields(q.Get("cmnd"))
			n, _ := strconv.Atoi(strings.TrimPrefix(strings.ToLower(f[0]), "power"))
			if len(f) > 1 {
				p.on[n] = strings.EqualFold(f[1], "on")
			}
			json.NewEncoder(w).Encode(map[string]string{"POWER" + strconv.Itoa(n): map[bool]string{true: "ON", false: "OFF"}[p.on[n]]})
		case "shelly":
			n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/relay/"))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			switch r.URL.Query().Get("turn") {
			case "on":
				p.on[n] = true
			case "off":
				p.on[n] = false
			}
			json.NewEncoder(w).Encode(map[string]any{"ison": p.on[n], "has_timer": false, "source": "http"})
		}
	})
}

func TestHTTPDrivers(t *testing.T) {
	for _, tc := range []struct{ protocol, outlet, wantCall string }{
		{"netio", "2", `POST /netio.json`},
		{"tasmota", "2", `GET /cm?cmnd=Power2+On&password=s3cret&user=admin`},
		{"shelly", "0", `GET /relay/0?turn=on`},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			p := &pdu{on: map[int]bool{}, auth: "admin:s3cret"}
			srv := httptest.NewServer(p.handler(t, tc.protocol))
			defer srv.Close()
			pwFile := filepath.Join(t.TempDir(), "pw")
			os.WriteFile(pwFile, []byte("s3cret\n"), 0o600)
			s := switchFor(t, fmt.Sprintf("{driver: http, protocol: %s, url: %q, outlet: %s, user: admin, password_file: %s, off_time: 20ms}", tc.protocol, srv.URL, tc.outlet, pwFile))
			ctx := context.Background()
			if err := s.On(ctx); err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(tc.outlet)
			if st, err := s.Status(ctx); err != nil || st != power.On || !p.on[n] {
				t.Fatalf("after On: %v, %v (PDU outlet %v)", st, err, p.on[n])
			}
			if p.calls[0] != tc.wantCall {
				t.Errorf("first request %q, want %q", p.calls[0], tc.wantCall)
			}
			if err := s.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Off(ctx); err != nil {
				t.Fatal(err)
			}
			if st, err := s.Status(ctx); err != nil || st != power.Off || p.on[n] {
				t.Fatalf("after Off: %v, %v", st, err)
			}
			if len(p.calls) != 6 { // on, status, off+on (cycle), off, status
				t.Errorf("calls %q", p.calls)
			}
			// Wrong password: the error names the board and says why.
			os.WriteFile(pwFile, []byte("wrong\n"), 0o600)
			bad := switchFor(t, fmt.Sprintf("{driver: http, protocol: %s, url: %q, outlet: %s, user: admin, password_file: %s}", tc.protocol, srv.URL, tc.outlet, pwFile))
			err := bad.On(ctx)
			if !errors.Is(err, power.ErrPower) || !strings.Contains(err.Error(), "board dut") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("wrong password: %v (must fail, name the board, not print the password)", err)
			}
		})
	}
}

func TestHTTPDriverDeadPDU(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	s := switchFor(t, fmt.Sprintf("{driver: http, protocol: shelly, url: %q, outlet: 0, timeout: 200ms}", srv.URL))
	start := time.Now()
	if err := s.On(context.Background()); !errors.Is(err, power.ErrPower) {
		t.Fatalf("dead PDU: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("dead PDU took %v: the timeout does not bound it", d)
	}
}

func TestGPIORelayOnSimChip(t *testing.T) {
	name := fmt.Sprintf("hlr-relay-%d", os.Getpid())
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chip.Remove() })
	s := switchFor(t, fmt.Sprintf("{driver: gpio-relay, relay: {chip: \"sim:%s\", offset: 2, active_low: true}, off_time: 20ms}", name))
	ctx := context.Background()
	level := func() bool {
		l, err := chip.Level(2)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if st, _ := s.Status(ctx); st != power.Unknown {
		t.Errorf("status before any operation: %v", st)
	}
	if err := s.On(ctx); err != nil {
		t.Fatal(err)
	}
	if level() { // active low: on drives the pin low
		t.Error("relay on, pin high: active_low ignored")
	}
	if err := s.Off(ctx); err != nil {
		t.Fatal(err)
	}
	if !level() {
		t.Error("relay off, pin low")
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Status(ctx); st != power.On || level() {
		t.Errorf("after cycle: %v, pin high %v", st, level())
	}
}
