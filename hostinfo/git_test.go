package hostinfo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/hostinfo"
)

// GitRef reads the branch and the tags at HEAD of a real repository:
// lightweight and annotated tags, loose and packed, from a subdirectory
// and from a linked worktree; a detached HEAD has no branch.
func TestGitRef(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git := func(wd string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
			"-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
		cmd.Dir = wd
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(dir, "init", "-q", repo)
	git(repo, "commit", "-q", "--allow-empty", "-m", "one")
	git(repo, "tag", "old")
	git(repo, "commit", "-q", "--allow-empty", "-m", "two")
	git(repo, "checkout", "-q", "-b", "release/1.x")
	git(repo, "tag", "v1.0")                      // lightweight, loose
	git(repo, "tag", "-a", "v1.0-ann", "-m", "a") // annotated, loose
	git(repo, "tag", "-a", "packed-ann", "-m", "p")
	git(repo, "tag", "packed-light")
	git(repo, "pack-refs", "--all") // moves every tag so far into packed-refs (peeled lines for annotated)
	git(repo, "tag", "-a", "after-pack", "-m", "l")
	want := []string{"after-pack", "packed-ann", "packed-light", "v1.0", "v1.0-ann"}

	branch, tags := hostinfo.GitRef(filepath.Join(repo, "sub", "dir"))
	if branch != "release/1.x" || !slices.Equal(tags, want) {
		t.Fatalf("GitRef = %q %v, want release/1.x %v", branch, tags, want)
	}
	wt := filepath.Join(dir, "wt")
	git(repo, "worktree", "add", "-q", "-b", "feature", wt)
	if branch, tags := hostinfo.GitRef(wt); branch != "feature" || !slices.Equal(tags, want) {
		t.Fatalf("worktree: GitRef = %q %v", branch, tags)
	}
	git(repo, "checkout", "-q", "--detach", "old")
	if branch, tags := hostinfo.GitRef(repo); branch != "" || !slices.Equal(tags, []string{"old"}) {
		t.Fatalf("detached at old: GitRef = %q %v", branch, tags)
	}
	if branch, tags := hostinfo.GitRef(t.TempDir()); branch != "" || tags != nil {
		t.Fatalf("no repository: %q %v", branch, tags)
	}
}

func TestGitRevisionReadsHead(t *testing.T) {
	root := t.TempDir()
	g := filepath.Join(root, ".git")
	os.MkdirAll(filepath.Join(g, "refs/heads"), 0o755)
	os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(g, "packed-refs"), []byte("# pack-refs\ndeadbeef refs/heads/main\n"), 0o644)
	sub := filepath.Join(root, "a/b")
	os.MkdirAll(sub, 0o755)
	if got := hostinfo.GitRevision(sub); got != "deadbeef" {
		t.Errorf("packed ref: got %q", got)
	}
	os.WriteFile(filepath.Join(g, "refs/heads/main"), []byte("cafef00d\n"), 0o644)
	if got := hostinfo.GitRevision(sub); got != "cafef00d" {
		t.Errorf("loose ref: got %q", got)
	}
}
