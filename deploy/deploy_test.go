package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/deploy/deploytest"
	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/internal/safefile/safefiletest"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/netns"
)

var agentBin, cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hilrig-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	agentBin, _, err = deploytest.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestBuildIsCachedByContent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A tiny module keeps this independent of the rest of the tree.
	mod := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module github.com/hilrig/hilrig\n\ngo 1.22\n")
	write("cmd/hilrig/main.go", "package main\n\nfunc main() { println(1) }\n")
	cache := t.TempDir()
	o := deploy.BuildOptions{ModuleDir: mod, CacheDir: cache, GOARCH: "arm64"}
	b1, err := deploy.Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := deploy.CheckBinary(b1, "linux", "arm64"); err != nil {
		t.Fatalf("the arm64 build fails its own check: %v", err)
	}
	st1, _ := os.Stat(b1)
	b2, err := deploy.Build(ctx, o)
	if err != nil || b2 != b1 {
		t.Fatalf("second build %s %v, want cached %s", b2, err, b1)
	}
	if st2, _ := os.Stat(b2); !st2.ModTime().Equal(st1.ModTime()) {
		t.Error("cached binary was rebuilt")
	}
	write("cmd/hilrig/main_test.go", "package main\n") // tests do not change the binary
	if b3, _ := deploy.Build(ctx, o); b3 != b1 {
		t.Errorf("a _test.go change invalidated the cache")
	}
	write("cmd/hilrig/main.go", "package main\n\nfunc main() { println(2) }\n")
	b4, err := deploy.Build(ctx, o)
	if err != nil || b4 == b1 {
		t.Errorf("source change did not rebuild: %s %v", b4, err)
	}
	write("cmd/hilrig/main.go", "package main\n\nfunc main() { undefined() }\n")
	if _, err := deploy.Build(ctx, o); !errors.Is(err, deploy.ErrBuild) {
		t.Errorf("broken source: %v, want ErrBuild", err)
	}
}

func helloAndBye(t *testing.T, p *deploy.Process) {
	t.Helper()
	dec := agentproto.NewDecoder(p.Stdout)
	m, err := dec.Next()
	if err != nil || m.Kind != agentproto.KindHello || m.Hello.Board != "b1" {
		t.Fatalf("first message %+v %v (stderr %s)", m, err, p.Stderr())
	}
	p.Stdin.Close() // EOF: the agent must say bye and exit 0
	m, err = dec.Next()
	if err != nil || m.Kind != agentproto.KindBye || m.Bye.Reason != "eof" {
		t.Fatalf("after EOF: %+v %v", m, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Errorf("exit: %v (stderr %s)", err, p.Stderr())
	}
}

func TestLocalAgent(t *testing.T) {
	p, err := deploy.StartLocal(context.Background(), agentBin, "agent", "-board", "b1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	helloAndBye(t, p)
}

func TestNetnsAgent(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
	ns, err := netns.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	p, err := deploy.StartNetns(context.Background(), ns.Name, agentBin, "agent", "-board", "b1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	helloAndBye(t, p)
}

func TestKillTakesTheProcessGroup(t *testing.T) {
	// A shell that starts a grandchild: Kill must take both.
	p, err := deploy.StartLocal(context.Background(), "/bin/sh", "-c", "sleep 300 & echo $!; wait")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(p.Stdout, &child); err != nil || child <= 0 {
		t.Fatalf("grandchild pid: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil { // idempotent
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Wait(ctx)
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("grandchild %d to die with Kill", child), func() bool {
		if syscall.Kill(child, 0) != nil {
			return true
		}
		// The grandchild is re-parented; it may be a zombie until reaped.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		return err == nil && containsState(b, 'Z')
	})
}

func containsState(stat []byte, s byte) bool {
	// "pid (comm) S ..." — the state follows the last ')'.
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] == s
		}
	}
	return false
}

func TestStartErrors(t *testing.T) {
	if _, err := deploy.StartLocal(context.Background(), "/nonexistent/hilrig", "agent"); !errors.Is(err, deploy.ErrStart) {
		t.Errorf("missing binary: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := deploy.StartLocal(ctx, agentBin, "agent"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

func TestDialSSHErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := deploy.DialSSH(context.Background(), deploy.SSHConfig{User: "u", Addr: "127.0.0.1:1", KeyFile: filepath.Join(dir, "nokey"), KnownHosts: filepath.Join(dir, "kh")})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing key: %v", err)
	}
}

// A key file that is a FIFO hung DialSSH (os.ReadFile waits for a writer),
// /dev/zero exhausted memory, and a key readable by others was used where
// OpenSSH refuses it: each is now refused at once, naming the file.
func TestDialSSHRefusesHostileKeyFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := safefiletest.FIFO(t, dir, "fifo")
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("key"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{fifo, "/dev/zero", open} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan error, 1)
		go func() {
			_, err := deploy.DialSSH(ctx, deploy.SSHConfig{User: "u", Addr: "127.0.0.1:1", KeyFile: key, KnownHosts: filepath.Join(dir, "kh")})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrRefused) || !strings.Contains(err.Error(), key) {
				t.Errorf("key %s: err = %v, want a refusal naming the file", key, err)
			}
		case <-ctx.Done():
			t.Errorf("key %s: DialSSH still blocked after 10 s", key)
		}
		cancel()
	}
}

// CheckBinary tells a binary built for another CPU from the right one,
// naming the file and both machines.
func TestCheckBinaryNamesArch(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := deploy.CheckBinary(self, "linux", runtime.GOARCH); err != nil {
		t.Fatalf("this test binary against its own arch: %v", err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	err = deploy.CheckBinary(self, "linux", other)
	if !errors.Is(err, deploy.ErrWrongArch) || !strings.Contains(err.Error(), self) || !strings.Contains(err.Error(), "linux/"+other) {
		t.Fatalf("CheckBinary(self, %s) = %v", other, err)
	}
	script := filepath.Join(t.TempDir(), "agent.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if err := deploy.CheckBinary(script, "linux", "arm64"); !errors.Is(err, deploy.ErrWrongArch) {
		t.Fatalf("CheckBinary(shell script) = %v", err)
	}
}

// Upload reads the local file whole (to hash and send it) before it talks
// to the board: a FIFO used to block it for ever and a device to fill
// memory. Both are refused at once, naming the file, before the session is
// used (so a client without a connection shows it).
func TestUploadRefusesNonRegular(t *testing.T) {
	fifo := safefiletest.FIFO(t, t.TempDir(), "fifo")
	for _, local := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := (&deploy.SSHClient{}).Upload(context.Background(), local, "/tmp/hilrig")
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), local) {
				t.Errorf("Upload(%s) = %v, want a refusal naming the file", local, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Upload(%s) still blocked after 10 s", local)
		}
	}
}
