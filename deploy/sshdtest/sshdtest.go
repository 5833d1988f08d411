// Package sshdtest is the test kit for SSH-reached boards: a real OpenSSH
// server (Debian's /usr/sbin/sshd) with fresh ed25519 host and client
// keys, standing in for a remote board — on loopback, or in a network
// namespace pair the test makes (the controller dialling from the other
// end of the veth). Tests only: it takes a testing.TB, skips when sshd (or
// namespaces) are missing and registers its own cleanup.
package sshdtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hilrig/hilrig/netns"
)

// SSHD is Debian's OpenSSH server binary.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd accepting the client key for any user (root
// included) and nothing else.
type Server struct {
	// Addr is host:port to reach it at.
	Addr string
	// Dir is the test's temporary directory holding keys and config.
	Dir string
	// ClientKey is the private key sshd accepts; KnownHosts a known_hosts
	// file holding the server's host key for Addr.
	ClientKey, KnownHosts string
	// HostPub is the server's host key.
	HostPub ssh.PublicKey
	// Pair is the namespace pair of a server started by InNetns (sshd in
	// B, the controller's side A); nil on loopback.
	Pair *netns.Pair
}

// Loopback starts sshd on 127.0.0.1 in this namespace, on a free port.
// Skips the test without sshd. Blocks until sshd accepts connections
// (at most 15 s, else the test fails).
func Loopback(t testing.TB) *Server {
	t.Helper()
	skipWithoutSSHD(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // sshd takes the port over (a race with other tests is reported by sshd)
	s := &Server{Addr: addr}
	s.start(t, nil)
	return s
}

// InNetns starts sshd on port 2222 in namespace B of a fresh pair, at
// B's veth address; Dial connects from namespace A. Skips the test
// without sshd or namespaces (root). Blocks until sshd accepts
// connections (at most 15 s, else the test fails).
func InNetns(t testing.TB) *Server {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("real-sshd deployment needs network namespaces: %v", err)
	}
	skipWithoutSSHD(t)
	pair, err := netns.NewPair(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	s := &Server{Pair: pair, Addr: net.JoinHostPort(pair.BAddr.String(), "2222")}
	s.start(t, pair.B)
	return s
}

func skipWithoutSSHD(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		t.Skip("real-sshd tests need Debian's openssh-server (apt-get install -y openssh-server)")
	}
}

// Dial connects to the server: from namespace A for a server in a
// namespace, else directly.
func (s *Server) Dial(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if s.Pair == nil {
		return d.DialContext(ctx, "tcp", s.Addr)
	}
	var c net.Conn
	err := s.Pair.A.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, "tcp", s.Addr)
		return err
	})
	return c, err
}

func (s *Server) start(t testing.TB, ns *netns.NS) {
	t.Helper()
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	s.ClientKey, s.KnownHosts = filepath.Join(s.Dir, "client_ed25519"), filepath.Join(s.Dir, "known_hosts")
	hostKey := filepath.Join(s.Dir, "host_ed25519")
	s.HostPub = WriteKey(t, hostKey)
	clientPub := WriteKey(t, s.ClientKey)
	auth := filepath.Join(s.Dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.KnownHosts, []byte(fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(s.HostPub))), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(s.Dir, "sshd_config")
	conf := strings.Join([]string{
		"Port " + port, "ListenAddress " + host, "HostKey " + hostKey,
		"PidFile none", "AuthorizedKeysFile " + auth,
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no", "LogLevel VERBOSE", "",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd insists on its privilege-separation directory (Debian's unit
	// makes it at boot; a container may not have it).
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-D", "-e", "-f", cfg}
	var cmd *exec.Cmd
	if ns != nil {
		cmd = ns.Command(context.Background(), SSHD, args...)
	} else {
		cmd = exec.Command(SSHD, args...)
	}
	var logb strings.Builder
	cmd.Stderr = &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sshd log:\n%s", logb.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := s.Dial(context.Background())
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited: %s", logb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on %s: %v\n%s", s.Addr, err, logb.String())
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// WriteKey writes a fresh ed25519 private key (OpenSSH PEM) to path and
// its public key to path.pub, and returns the public key.
func WriteKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "hilrig test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	return sp
}
