package live_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
)

// The endpoint's bounds (issue 31, finding 8): 19,990 idle keep-alive
// connections used to leave the controller without descriptors, and slow
// readers held it indefinitely. These tests count this process's open
// descriptors in /proc/self/fd: the client's and the server's ends of a
// loopback connection are both here.

// openFDs is the number of descriptors this process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory's own descriptor while read
}

// serve starts m's endpoint on loopback with opts until the test ends.
func serve(t *testing.T, m *live.Metrics, opts *live.ServeOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := m.Serve(ctx, "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}

const scrapeRequest = "GET /metrics HTTP/1.1\r\nHost: hilrig\r\n\r\n"

// keepAlive dials addr and sends one scrape on a keep-alive connection;
// with read set, it also reads the whole response. The caller closes the
// connection.
func keepAlive(t *testing.T, addr string, read bool) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, scrapeRequest); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if read {
		readScrape(t, c, br, 10*time.Second)
	}
	return c, br
}

// readScrape reads one whole scrape response from c within d.
func readScrape(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
}

// Idle keep-alive connections are closed by the server after IdleTimeout,
// and their descriptors with them. Before the fix nothing closed them.
func TestServeClosesIdleKeepAlives(t *testing.T) {
	const n = 40
	addr := serve(t, live.New(), &live.ServeOptions{IdleTimeout: 200 * time.Millisecond, MaxConns: 2 * n})
	base := openFDs(t)
	conns := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	for i := range conns {
		conns[i], readers[i] = keepAlive(t, addr, true)
	}
	for i, c := range conns {
		// The server's close shows as EOF; a connection it keeps open runs
		// into this deadline instead.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := readers[i].ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle keep-alive connection %d of %d: read %v, want EOF (server closes it after the 200ms IdleTimeout)", i, n, err)
		}
	}
	// The server's ends are closed: only the test's own n remain.
	if got := openFDs(t) - base; got > n {
		t.Errorf("%d descriptors more than before the %d connections, want at most their %d client ends", got, n, n)
	}
}

// Past MaxConns, connections wait in the kernel's accept queue: the
// process holds no descriptor for them and serves them once a slot frees.
func TestServeCapsConnections(t *testing.T) {
	const limit, extra = 4, 50
	addr := serve(t, live.New(), &live.ServeOptions{MaxConns: limit, IdleTimeout: time.Minute})
	base := openFDs(t)
	held := make([]net.Conn, limit)
	for i := range held {
		held[i], _ = keepAlive(t, addr, true)
	}
	waiting := make([]net.Conn, extra)
	readers := make([]*bufio.Reader, extra)
	for i := range waiting {
		waiting[i], readers[i] = keepAlive(t, addr, false)
	}
	// Absence of a response can only be shown by waiting; the unfixed
	// endpoint answered at once.
	waiting[0].SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := readers[0].Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection past MaxConns=%d was served at once (read: %v), want it queued", limit, err)
	}
	// limit served connections (two ends each) plus the waiting clients'
	// ends; the unfixed endpoint had accepted all of them (+extra).
	if got, want := openFDs(t)-base, 2*limit+extra; got > want {
		t.Errorf("%d descriptors for %d connections with MaxConns=%d, want at most %d", got, limit+extra, limit, want)
	}
	// A slot frees: the first waiting connection is served.
	held[0].Close()
	readScrape(t, waiting[0], readers[0], 10*time.Second)
}

// A client that sends a scrape and stops reading loses its connection
// after WriteTimeout; before the fix it held it (and its descriptor) for
// as long as it liked.
func TestServeCutsSlowReader(t *testing.T) {
	m := live.New()
	// An exposition of ~10 MB, more than the loopback socket buffers hold,
	// so the server's writes block on the reader.
	long := strings.Repeat("x", 1400)
	for i := range live.MaxCases {
		m.ObserveCase(&report.Case{Suite: "s", Name: fmt.Sprintf("%s%d", long, i), Sent: 1, Delivered: 1})
	}
	addr := serve(t, m, &live.ServeOptions{WriteTimeout: 300 * time.Millisecond})
	base := openFDs(t)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, scrapeRequest); err != nil {
		t.Fatal(err)
	}
	// The first bytes show the server accepted and is writing; a 4 KiB
	// read of a 10 MB response does not unblock it.
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.Peek(1); err != nil {
		t.Fatalf("no response started: %v", err)
	}
	testkit.Until(t, 10*time.Second, func() error {
		if n := openFDs(t) - base; n > 1 {
			return fmt.Errorf("the server still holds the slow reader's connection (%d descriptors), WriteTimeout 300ms", n)
		}
		return nil
	})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("the slow reader got the whole exposition, want it cut off")
	}
}

// Bound beyond loopback, the endpoint warns that it has no
// authentication; on loopback it says nothing. The wildcard address is
// bound inside a private network namespace, so nothing outside can reach
// it.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var loopLog testkit.SyncBuffer
	if _, err := live.New().Serve(ctx, "127.0.0.1:0", &live.ServeOptions{Logger: slogTo(&loopLog)}); err != nil {
		t.Fatal(err)
	}
	if s := loopLog.String(); s != "" {
		t.Errorf("loopback bind logged %q, want nothing", s)
	}
	ns, err := netns.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var wideLog testkit.SyncBuffer
	var addr net.Addr
	err = ns.Do(func() (err error) {
		addr, err = live.New().Serve(ctx, "0.0.0.0:0", &live.ServeOptions{Logger: slogTo(&wideLog)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := wideLog.String()
	if !strings.Contains(s, "level=WARN") || !strings.Contains(s, "no authentication") || !strings.Contains(s, addr.String()) {
		t.Errorf("bind to %s logged %q, want a warning naming the address and the lack of authentication", addr, s)
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
