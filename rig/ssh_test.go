package rig_test

import (
	"context"
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
	"github.com/hilrig/hilrig/deploy/sshdtest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

func TestSSHDeployRunsAgentOverRealSSHD(t *testing.T) {
	t0 := time.Now()
	s := sshdtest.InNetns(t)
	t.Logf("sshd up after %v", time.Since(t0))
	remoteDir := filepath.Join(s.Dir, "remote-bin")
	yaml := fmt.Sprintf(`name: ssh-test
boards:
  - name: remote
    reach: ssh://root@%s
    ssh: {key_file: %s, known_hosts: %s, remote_dir: %s}
  - name: near
    reach: netns:%s
links:
  - {name: remote-near, a: remote, b: near, transport: udp, a_addr: %s, b_addr: %s}
`, s.Addr, s.ClientKey, s.KnownHosts, remoteDir, s.Pair.A.Name, s.Pair.BAddr, s.Pair.AAddr)
	rack, err := fixtures.ParseRack("ssh-test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache},
		SSHDial: func(ctx context.Context, _, _, _ string) (net.Conn, error) { return s.Dial(ctx) }})
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
	res := runFlow(ctx, t, r, rig.FlowSpec{Traffic: rig.Traffic{Link: "remote-near", Payload: 512, Count: 10000, RateHz: 10000}})
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
	s := sshdtest.InNetns(t)
	ctx := context.Background()
	other := sshdtest.WriteKey(t, filepath.Join(s.Dir, "other_host"))
	wrong := filepath.Join(s.Dir, "known_hosts_wrong")
	if err := os.WriteFile(wrong, []byte(fmt.Sprintf("[%s]:2222 %s", s.Pair.BAddr, ssh.MarshalAuthorizedKey(other))), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(s.Dir, "known_hosts_empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, kh := range map[string]string{"changed key": wrong, "no entry": empty} {
		c, err := deploy.DialSSH(ctx, deploy.SSHConfig{User: "root", Addr: s.Addr, KeyFile: s.ClientKey, KnownHosts: kh,
			Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.Dial(ctx) }})
		if !errors.Is(err, deploy.ErrHostKey) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: DialSSH = %v, want ErrHostKey", name, err)
			continue
		}
		if !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.HostPub)) {
			t.Errorf("%s: error does not name the offered key's fingerprint: %v", name, err)
		}
	}
	// And the right known_hosts works, with upload verification.
	c, err := deploy.DialSSH(ctx, deploy.SSHConfig{User: "root", Addr: s.Addr, KeyFile: s.ClientKey, KnownHosts: s.KnownHosts,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.Dial(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t1 := time.Now()
	p1, err := c.Upload(ctx, hilrigBin, filepath.Join(s.Dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upload took %v", time.Since(t1))
	t1 = time.Now()
	p2, err := c.Upload(ctx, hilrigBin, filepath.Join(s.Dir, "up"))
	if err != nil || p1 != p2 {
		t.Errorf("second upload: %s %v, want %s", p2, err, p1)
	}
	t.Logf("second upload took %v", time.Since(t1))
	out, err := exec.Command("cmp", hilrigBin, p1).CombinedOutput()
	if err != nil {
		t.Errorf("uploaded file differs: %s %v", out, err)
	}
}
