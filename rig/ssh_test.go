package rig_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/rig"
)

// sshBoard is a real OpenSSH server in a namespace made by the test,
// standing in for a remote board.
type sshBoard struct {
	pair                  *netns.Pair
	addr                  string // BAddr:2222
	dir                   string
	clientKey, knownHosts string
	hostPub               ssh.PublicKey
}

func writeKey(t *testing.T, path string) ssh.PublicKey {
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

func startSSHD(t *testing.T) *sshBoard {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("real-sshd deployment needs network namespaces: %v", err)
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("real-sshd deployment needs Debian's openssh-server (apt-get install -y openssh-server)")
	}
	ctx := context.Background()
	pair, err := netns.NewPair(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	dir := t.TempDir()
	s := &sshBoard{pair: pair, dir: dir, addr: net.JoinHostPort(pair.BAddr.String(), "2222"),
		clientKey: filepath.Join(dir, "client_ed25519"), knownHosts: filepath.Join(dir, "known_hosts")}
	s.hostPub = writeKey(t, filepath.Join(dir, "host_ed25519"))
	clientPub := writeKey(t, s.clientKey)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("[%s]:2222 %s", pair.BAddr, ssh.MarshalAuthorizedKey(s.hostPub))
	if err := os.WriteFile(s.knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sshd_config")
	conf := strings.Join([]string{
		"Port 2222", "ListenAddress " + pair.BAddr.String(), "HostKey " + filepath.Join(dir, "host_ed25519"),
		"PidFile none", "AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
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
	cmd := pair.B.Command(ctx, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	var logb strings.Builder
	cmd.Stderr = &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", logb.String())
		}
	})
	// Wait (with a deadline) until sshd accepts connections.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := s.dial(ctx)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on %s: %v\n%s", s.addr, err, logb.String())
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	return s
}

// dial connects from namespace A (the controller's side of the veth).
func (s *sshBoard) dial(ctx context.Context) (net.Conn, error) {
	var c net.Conn
	err := s.pair.A.Do(func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", s.addr)
		return err
	})
	return c, err
}

func TestSSHDeployRunsAgentOverRealSSHD(t *testing.T) {
	t0 := time.Now()
	s := startSSHD(t)
	t.Logf("sshd up after %v", time.Since(t0))
	remoteDir := filepath.Join(s.dir, "remote-bin")
	yaml := fmt.Sprintf(`name: ssh-test
boards:
  - name: remote
    reach: ssh://root@%s
    ssh: {key_file: %s, known_hosts: %s, remote_dir: %s}
  - name: near
    reach: netns:%s
links:
  - {name: remote-near, a: remote, b: near, transport: udp, a_addr: %s, b_addr: %s}
`, s.addr, s.clientKey, s.knownHosts, remoteDir, s.pair.A.Name, s.pair.BAddr, s.pair.AAddr)
	rack, err := fixtures.ParseRack("ssh-test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache},
		SSHDial: func(ctx context.Context, _, _, _ string) (net.Conn, error) { return s.dial(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			r.Close()
		}
	})
	t.Logf("rig open after %v", time.Since(t0))
	a, err := r.Agent(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("remote agent up after %v", time.Since(t0))
	if !strings.HasPrefix(a.Where(), "ssh root@") || a.Hello.Board != "remote" || a.Hello.PID == 0 {
		t.Errorf("remote agent: where %s hello %+v", a.Where(), a.Hello)
	}
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "remote-near", Payload: 512, Count: 10000, RateHz: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkZeroLoss(t, res, 10000)
	t.Logf("flow done after %v", time.Since(t0))

	// The uploaded binary is content-addressed and verified; a second
	// upload of the same file is a no-op returning the same path.
	ents, err := os.ReadDir(remoteDir)
	if err != nil || len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "hilrig-") {
		t.Errorf("remote dir holds %v (%v), want one hilrig-<sha> binary", ents, err)
	}
	remotePID := a.Hello.PID
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	// The remote agent (a child of sshd in the namespace) must be gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", remotePID))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote agent pid %d still alive 10s after Close", remotePID)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

func TestSSHRefusesUnknownHostKey(t *testing.T) {
	s := startSSHD(t)
	ctx := context.Background()
	other := writeKey(t, filepath.Join(s.dir, "other_host"))
	wrong := filepath.Join(s.dir, "known_hosts_wrong")
	if err := os.WriteFile(wrong, []byte(fmt.Sprintf("[%s]:2222 %s", s.pair.BAddr, ssh.MarshalAuthorizedKey(other))), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(s.dir, "known_hosts_empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, kh := range map[string]string{"changed key": wrong, "no entry": empty} {
		c, err := deploy.DialSSH(ctx, deploy.SSHConfig{User: "root", Addr: s.addr, KeyFile: s.clientKey, KnownHosts: kh,
			Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.dial(ctx) }})
		if !errors.Is(err, deploy.ErrHostKey) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: DialSSH = %v, want ErrHostKey", name, err)
			continue
		}
		if !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.hostPub)) {
			t.Errorf("%s: error does not name the offered key's fingerprint: %v", name, err)
		}
	}
	// And the right known_hosts works, with upload verification.
	c, err := deploy.DialSSH(ctx, deploy.SSHConfig{User: "root", Addr: s.addr, KeyFile: s.clientKey, KnownHosts: s.knownHosts,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.dial(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t1 := time.Now()
	p1, err := c.Upload(ctx, hilrigBin, filepath.Join(s.dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upload took %v", time.Since(t1))
	t1 = time.Now()
	p2, err := c.Upload(ctx, hilrigBin, filepath.Join(s.dir, "up"))
	if err != nil || p1 != p2 {
		t.Errorf("second upload: %s %v, want %s", p2, err, p1)
	}
	t.Logf("second upload took %v", time.Since(t1))
	out, err := exec.Command("cmp", hilrigBin, p1).CombinedOutput()
	if err != nil {
		t.Errorf("uploaded file differs: %s %v", out, err)
	}
}
