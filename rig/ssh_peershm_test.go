package rig_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/deploy/sshdtest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/rig"
)

// TestSSHBoardFastDDSShmCleanedAfterKill: a Fast DDS endpoint on an SSH
// board lists its participant's shared-memory files in its started
// message; after its agent is SIGKILLed (which leaves every one of them,
// TestFastDDSShmLeftovers) the rig removes them on the board over SSH
// with `hilrig-peer shm-clean`. Before, only boards on the controller
// were cleaned. (The test's sshd runs in a network namespace of this
// machine, so the board's /dev/shm is this one's and the test can look.)
func TestSSHBoardFastDDSShmCleanedAfterKill(t *testing.T) {
	if err := rig.PeerInstalled("fastdds"); err != nil {
		t.Skipf("Fast DDS not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold cgo build on a busy machine
	defer cancel()
	bin, err := deploy.Build(ctx, deploy.BuildOptions{Peers: []string{"fastdds"}, CacheDir: buildCache})
	if err != nil {
		t.Fatalf("build the peer agent: %v", err)
	}
	s := sshdtest.InNetns(t)
	yaml := fmt.Sprintf(`name: ssh-peershm
boards:
  - name: remote
    reach: ssh://root@%s
    ssh: {key_file: %s, known_hosts: %s, remote_dir: %s}
`, s.Addr, s.ClientKey, s.KnownHosts, filepath.Join(s.Dir, "remote-bin"))
	rack, err := fixtures.ParseRack("ssh-peershm.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: bin, Build: deploy.BuildOptions{CacheDir: buildCache},
		SSHDial: func(ctx context.Context, _, _, _ string) (net.Conn, error) { return s.Dial(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	a, err := r.Agent(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	c := middleware.Contract{Topic: fmt.Sprintf("peershm/%d", os.Getpid()), MaxPayload: 256, Reliability: middleware.Reliable, Depth: 8}
	ep, err := a.Start(ctx, agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Middleware: "fastdds-shm", Contract: c})
	if err != nil {
		t.Fatal(err)
	}
	files := ep.Started().PeerShm
	if len(files) == 0 {
		t.Fatal("the Fast DDS endpoint's started message lists no shared-memory files")
	}
	t.Cleanup(func() { // whatever the outcome, this test leaves none
		for _, f := range files {
			os.Remove(f)
			os.Remove(f + "_el")
		}
	})
	// A port file (fastrtps_port<N>) is shared by every Fast DDS
	// participant of that domain and participant id on the host: another
	// test's agent may create the same name once ours is gone (CI: a
	// concurrent package's domain-0 agent recreated fastrtps_port7411).
	// So the check is by identity: the file the agent held must be gone,
	// a new file of the same name is someone else's.
	held := map[string]os.FileInfo{}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("listed %s: %v", f, err)
		}
		held[f] = fi
		if fi, err := os.Stat(f + "_el"); err == nil {
			held[f+"_el"] = fi
		}
	}
	if err := a.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for p, before := range held {
		if now, err := os.Stat(p); err == nil {
			if os.SameFile(before, now) {
				t.Errorf("%s still there after the SSH board's agent was killed", p)
			} else {
				t.Logf("%s was removed and made again by another participant of its domain", p)
			}
		}
	}
	t.Logf("removed on the board after the kill: %v", files)
}
