package deploy

import (
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestPeerEnvCrossNamesWhatIsMissing: a peer agent for another
// architecture without Debian's cross toolchain and the peers' libraries
// of that architecture fails with ErrBuild naming each missing compiler,
// library and package; with them present, the cgo cross environment.
func TestPeerEnvCrossNamesWhatIsMissing(t *testing.T) {
	arch := "arm64"
	if runtime.GOARCH == "arm64" {
		arch = "amd64"
	}
	triplet, _ := debianTriplet(arch)
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	_, err := peerEnv("linux", arch, []string{"cyclonedds", "iceoryx"}, none, func(string) bool { return false })
	if !errors.Is(err, ErrBuild) {
		t.Fatalf("err = %v, want ErrBuild", err)
	}
	for _, want := range []string{triplet + "-gcc", triplet + "-g++", "libddsc.so", "cyclonedds-dev:" + arch, "libiceoryx-binding-c-dev:" + arch} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "fastrtps") {
		t.Errorf("error %q names a peer that was not asked for", err)
	}
	all := func(p string) (string, error) { return "/usr/bin/" + p, nil }
	env, err := peerEnv("linux", arch, []string{"cyclonedds"}, all, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if j := strings.Join(env, " "); !strings.Contains(j, "CGO_ENABLED=1") || !strings.Contains(j, "CC="+triplet+"-gcc") || !strings.Contains(j, "CXX="+triplet+"-g++") {
		t.Errorf("cross env = %v", env)
	}
	if _, err := peerEnv("darwin", "arm64", []string{"cyclonedds"}, all, func(string) bool { return true }); !errors.Is(err, ErrBuild) {
		t.Errorf("darwin peer agent: %v, want ErrBuild", err)
	}
}

// TestBuildPeerAgent: Build with Peers builds the cgo peer agent with
// those adapters (its version lists them), cached apart from hilrig.
func TestBuildPeerAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a cgo binary")
	}
	if _, err := peerEnv(runtime.GOOS, runtime.GOARCH, []string{"cyclonedds"}, exec.LookPath, fileExists); err != nil {
		t.Skipf("no native peer toolchain: %v", err)
	}
	bin, err := Build(t.Context(), BuildOptions{Peers: []string{"cyclonedds"}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "peers=cyclonedds") {
		t.Fatalf("%s version: %q, %v; want peers=cyclonedds", bin, out, err)
	}
}
