package hostinfo

import (
	"bytes"
	"compress/zlib"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
)

// GitRevision returns the revision of the working tree containing dir, read
// from .git without running git: "<sha>" from HEAD (following a symbolic ref
// through refs/ or packed-refs). Without a .git it falls back to the binary's
// build info (vcs.revision, "-dirty" when vcs.modified). "" if unknown.
func GitRevision(dir string) string {
	if gitDir, ok := findGitDir(dir); ok {
		if rev := headRevision(gitDir); rev != "" {
			return rev
		}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, mod string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			mod = s.Value
		}
	}
	if rev != "" && mod == "true" {
		rev += "-dirty"
	}
	return rev
}

// headRevision is the commit HEAD of gitDir names: detached, a loose ref (in
// the worktree's own dir or the common dir) or a packed one; "" if none.
func headRevision(gitDir string) string {
	head := readTrim(filepath.Join(gitDir, "HEAD"))
	ref, ok := strings.CutPrefix(head, "ref: ")
	if !ok {
		return head // detached
	}
	// A worktree's refs live in the common dir.
	common := commonDir(gitDir)
	for _, g := range []string{gitDir, common} {
		if v := readTrim(filepath.Join(g, ref)); v != "" {
			return v
		}
	}
	b, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok && name == ref {
			return sha
		}
	}
	return ""
}

// GitRef returns the branch checked out in the working tree containing
// dir ("" on a detached HEAD or without a .git) and the tags pointing at
// its HEAD commit, sorted. Like GitRevision it reads .git without running
// git: loose refs under refs/tags (an annotated tag is peeled through its
// loose tag object) and packed-refs (peeled "^" lines). An annotated tag
// whose object sits only in a pack file and has no peeled line is not
// found: such tags are rare (git pack-refs writes peeled lines).
func GitRef(dir string) (branch string, tags []string) {
	gitDir, ok := findGitDir(dir)
	if !ok {
		return "", nil
	}
	head := readTrim(filepath.Join(gitDir, "HEAD"))
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		branch = strings.TrimPrefix(ref, "refs/heads/")
	}
	rev := headRevision(gitDir)
	if rev == "" {
		return branch, nil
	}
	common := commonDir(gitDir)
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			tags = append(tags, name)
		}
	}
	tagDir := filepath.Join(common, "refs", "tags")
	_ = filepath.WalkDir(tagDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		sha := readTrim(p)
		if sha == rev || peelLoose(common, sha) == rev {
			if rel, err := filepath.Rel(tagDir, p); err == nil {
				add(filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(common, "packed-refs")); err == nil {
		var last string // the tag of the previous line, for a "^peeled" line
		for _, line := range strings.Split(string(b), "\n") {
			if peeled, ok := strings.CutPrefix(line, "^"); ok {
				if last != "" && peeled == rev {
					add(last)
				}
				continue
			}
			last = ""
			sha, name, ok := strings.Cut(line, " ")
			if t, isTag := strings.CutPrefix(name, "refs/tags/"); ok && isTag {
				last = t
				if sha == rev {
					add(t)
				}
			}
		}
	}
	slices.Sort(tags)
	return branch, tags
}

// findGitDir is the .git directory of the working tree containing dir
// (following a worktree's "gitdir:" file).
func findGitDir(dir string) (string, bool) {
	for d := dir; d != ""; {
		gitDir := filepath.Join(d, ".git")
		if st, err := os.Stat(gitDir); err == nil {
			if !st.IsDir() {
				g, ok := strings.CutPrefix(readTrim(gitDir), "gitdir: ")
				if !ok {
					return "", false
				}
				if !filepath.IsAbs(g) {
					g = filepath.Join(d, g)
				}
				gitDir = g
			}
			return gitDir, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", false
}

// commonDir is where a (worktree's) git dir keeps refs and objects.
func commonDir(gitDir string) string {
	if c := readTrim(filepath.Join(gitDir, "commondir")); c != "" {
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		return c
	}
	return gitDir
}

// peelLoose returns the object an annotated tag object sha points at,
// read from its loose object file ("" when sha is not a loose tag
// object).
func peelLoose(common, sha string) string {
	if len(sha) < 3 {
		return ""
	}
	f, err := os.Open(filepath.Join(common, "objects", sha[:2], sha[2:]))
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return ""
	}
	defer zr.Close()
	var b [256]byte
	n, _ := io.ReadFull(zr, b[:])
	obj := b[:n]
	hdr, body, ok := bytes.Cut(obj, []byte{0})
	if !ok || !bytes.HasPrefix(hdr, []byte("tag ")) {
		return ""
	}
	line, _, _ := bytes.Cut(body, []byte{'\n'})
	target, ok := bytes.CutPrefix(line, []byte("object "))
	if !ok {
		return ""
	}
	return string(target)
}
