package power

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
)

// webPDU speaks one of the documented PDU HTTP protocols:
//
//   - NETIO JSON API: POST <url>/netio.json {"Outputs":[{"ID":n,"Action":0|1}]}
//     (0 off, 1 on), GET <url>/netio.json for {"Outputs":[{"ID":n,"State":0|1}]};
//     HTTP basic auth.
//   - Tasmota: GET <url>/cm?cmnd=Power<n>%20On|Off, status without the
//     argument; answers {"POWER<n>":"ON"} ({"POWER":"ON"} on a one-relay
//     device); the web password goes in user/password query parameters.
//   - Shelly Gen1: GET <url>/relay/<n>?turn=on|off, status GET <url>/relay/<n>;
//     answers {"ison":true|false}; HTTP basic auth.
type webPDU struct {
	cfg      fixtures.Power
	password string
	client   *http.Client
}

func newHTTP(cfg fixtures.Power, password string) *webPDU {
	return &webPDU{cfg: cfg, password: password, client: &http.Client{Timeout: cfg.Timeout}}
}

func (w *webPDU) base() string { return strings.TrimRight(w.cfg.URL, "/") }

func (w *webPDU) do(ctx context.Context, method, u string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.cfg.User != "" && w.cfg.Protocol != fixtures.ProtocolTasmota {
		req.SetBasicAuth(w.cfg.User, w.password)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, redact(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %s: %.200s", method, redact(u), resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: answer is not the protocol's JSON: %w: %.200s", method, redact(u), err, b)
	}
	return nil
}

// redact drops a Tasmota password from a URL for error messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	if q.Has("password") {
		q.Set("password", "xxx")
		p.RawQuery = q.Encode()
	}
	return p.String()
}

type netioDoc struct {
	Outputs []struct {
		ID     int  `json:"ID"`
		State  *int `json:"State,omitempty"`
		Action *int `json:"Action,omitempty"`
	} `json:"Outputs"`
}

func (d netioDoc) state(id int) (State, error) {
	for _, o := range d.Outputs {
		if o.ID == id && o.State != nil {
			if *o.State == 1 {
				return On, nil
			}
			return Off, nil
		}
	}
	return Unknown, fmt.Errorf("the NETIO answer has no output %d", id)
}

func (w *webPDU) tasmotaURL(arg string) string {
	q := url.Values{"cmnd": {strings.TrimSpace("Power" + strconv.Itoa(*w.cfg.Outlet) + " " + arg)}}
	if w.password != "" {
		q.Set("user", w.cfg.User)
		if w.cfg.User == "" {
			q.Set("user", "admin")
		}
		q.Set("password", w.password)
	}
	return w.base() + "/cm?" + q.Encode()
}

func (w *webPDU) tasmotaState(m map[string]string) (State, error) {
	n := *w.cfg.Outlet
	v, ok := m["POWER"+strconv.Itoa(n)]
	if !ok && n == 1 {
		v, ok = m["POWER"]
	}
	switch {
	case !ok:
		return Unknown, fmt.Errorf("the Tasmota answer has no POWER%d: %v", n, m)
	case strings.EqualFold(v, "ON"):
		return On, nil
	case strings.EqualFold(v, "OFF"):
		return Off, nil
	}
	return Unknown, fmt.Errorf("tasmota: POWER%d is %q", n, v)
}

type shellyRelay struct {
	IsOn *bool `json:"ison"`
}

func (s shellyRelay) state() (State, error) {
	if s.IsOn == nil {
		return Unknown, fmt.Errorf("the Shelly answer has no ison")
	}
	if *s.IsOn {
		return On, nil
	}
	return Off, nil
}

func (w *webPDU) set(ctx context.Context, on bool) error {
	want := map[bool]State{true: On, false: Off}[on]
	var got State
	var err error
	switch w.cfg.Protocol {
	case fixtures.ProtocolNETIO:
		body, _ := json.Marshal(map[string]any{"Outputs": []map[string]int{{"ID": *w.cfg.Outlet, "Action": map[bool]int{true: 1, false: 0}[on]}}})
		var d netioDoc
		if err = w.do(ctx, http.MethodPost, w.base()+"/netio.json", body, &d); err == nil {
			got, err = d.state(*w.cfg.Outlet)
		}
	case fixtures.ProtocolTasmota:
		var m map[string]string
		if err = w.do(ctx, http.MethodGet, w.tasmotaURL(map[bool]string{true: "On", false: "Off"}[on]), nil, &m); err == nil {
			got, err = w.tasmotaState(m)
		}
	case fixtures.ProtocolShelly:
		var r shellyRelay
		u := fmt.Sprintf("%s/relay/%d?turn=%s", w.base(), *w.cfg.Outlet, map[bool]string{true: "on", false: "off"}[on])
		if err = w.do(ctx, http.MethodGet, u, nil, &r); err == nil {
			got, err = r.state()
		}
	default:
		return fmt.Errorf("unknown protocol %q", w.cfg.Protocol)
	}
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the PDU answered %s after switching %s", got, want)
	}
	return nil
}

func (w *webPDU) status(ctx context.Context) (State, error) {
	switch w.cfg.Protocol {
	case fixtures.ProtocolNETIO:
		var d netioDoc
		if err := w.do(ctx, http.MethodGet, w.base()+"/netio.json", nil, &d); err != nil {
			return Unknown, err
		}
		return d.state(*w.cfg.Outlet)
	case fixtures.ProtocolTasmota:
		var m map[string]string
		if err := w.do(ctx, http.MethodGet, w.tasmotaURL(""), nil, &m); err != nil {
			return Unknown, err
		}
		return w.tasmotaState(m)
	case fixtures.ProtocolShelly:
		var r shellyRelay
		if err := w.do(ctx, http.MethodGet, fmt.Sprintf("%s/relay/%d", w.base(), *w.cfg.Outlet), nil, &r); err != nil {
			return Unknown, err
		}
		return r.state()
	}
	return Unknown, fmt.Errorf("unknown protocol %q", w.cfg.Protocol)
}

func (w *webPDU) close() error { w.client.CloseIdleConnections(); return nil }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
