//go:build linux

package middleware_test

import (
	"errors"
	"github.com/hilrig/hilrig/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/middleware/internal/udp/udptest"
)

// writeKey writes a hex domain key file with the given mode.
func writeKey(t *testing.T, name string, b byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	hex := strings.Repeat(string("0123456789abcdef"[b%16]), 64) + "\n"
	if err := os.WriteFile(p, []byte(hex), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // umask may have narrowed it
		t.Fatal(err)
	}
	return p
}

// TestUDPKeyFileModeRefused: a domain key file group or others can read is
// refused with ErrPermission naming the file; an unreadable or malformed
// one with ErrContract naming it.
func TestUDPKeyFileModeRefused(t *testing.T) {
	n := openNode(t, "udp-keymode", testDomain(t))
	open := func(key string) error {
		c := middleware.Contract{Topic: "udp/keymode", MaxPayload: 64, Transport: middleware.TransportUDP,
			UDP: middleware.UDPConfig{Listen: "127.0.0.1:0", KeyFile: key}}
		s, err := n.NewSubscriber(c, nil)
		if err == nil {
			s.Close()
		}
		return err
	}
	loose := writeKey(t, "loose.key", 1, 0o644)
	if err := open(loose); !errors.Is(err, middleware.ErrPermission) || !strings.Contains(err.Error(), loose) || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("mode 0644 key: %v, want ErrPermission naming %s and 0600", err, loose)
	}
	bad := filepath.Join(t.TempDir(), "bad.key")
	if err := os.WriteFile(bad, []byte("not hex at all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bad, filepath.Join(t.TempDir(), "missing.key"), t.TempDir()} {
		if err := open(f); !errors.Is(err, middleware.ErrContract) || !strings.Contains(err.Error(), filepath.Base(f)) {
			t.Fatalf("key file %s: %v, want ErrContract naming it", f, err)
		}
	}
	if err := open(writeKey(t, "ok.key", 2, 0o600)); err != nil {
		t.Fatalf("0600 key: %v", err)
	}
}

// TestUDPAuthenticatedTopic: publisher and subscriber under one key
// (node option and contract) exchange reliable messages; a publisher under
// another key reaches nothing and is counted as unauthenticated; the keyed
// send/receive path does not allocate.
func TestUDPAuthenticatedTopic(t *testing.T) {
	key := writeKey(t, "domain.key", 3, 0o600)
	n, err := middleware.OpenNode("udp-auth", &middleware.NodeOptions{Domain: testDomain(t), UDPKeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	c := middleware.Contract{Topic: "udp/auth", MaxPayload: 1024, Transport: middleware.TransportUDP, Reliability: middleware.Reliable,
		UDP: middleware.UDPConfig{Listen: "127.0.0.1:0", HeartbeatPeriod: time.Hour}}
	pub, sub := udpLoop(t, n, c)
	c.UDP.Peers = []string{sub.LocalUDPAddr().String()} // for the foreign-key publisher below
	p := make([]byte, 64)
	var got uint64
	fn := func(m *middleware.Message) {
		if udptest.Check(m.Payload, m.Header.Seq) == nil {
			got++
		}
	}
	seq := uint64(0)
	round := func() {
		seq++
		udptest.Fill(p, seq)
		sendTake(t, pub, sub, p, fn)
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("keyed Send+Next over UDP: %v allocs/op, want 0", a)
	}
	if got != seq {
		t.Fatalf("delivered %d intact of %d", got, seq)
	}

	oc := c
	oc.UDP.KeyFile = writeKey(t, "other.key", 4, 0o600)
	other, err := n.NewPublisher(oc, &middleware.PublisherOptions{SendTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Send(p)
	testkit.Eventually(t, 5*time.Second, "foreign-key datagrams counted", func() bool {
		st, _ := sub.UDPStats()
		return st.Unauthenticated > 0
	})
	other.Close()
	st, _ := sub.UDPStats()
	if st.Delivered != seq {
		t.Fatalf("delivered %d, want %d (nothing from the foreign key): %+v", st.Delivered, seq, st)
	}
}
