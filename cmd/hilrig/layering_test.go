package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/hilrig/hilrig"

type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs `go list -deps=false -json ./...` from the module root.
func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps", mod+"/...")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(&out)
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayering enforces the data-flow rules of DEVELOPERS.md and the house
// style: middleware imports none of the harness, nothing imports suites,
// vendor libraries are imported only from their internal leaves, and the
// hilrig binary does not link gomega.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	harness := []string{"gpio", "timesync", "scopes", "fixtures", "suites", "report"}
	under := func(p, dir string) bool {
		return p == mod+"/"+dir || strings.HasPrefix(p, mod+"/"+dir+"/")
	}
	// Vendor module → the only package trees allowed to import it directly.
	vendors := map[string][]string{
		"github.com/warthog618/go-gpiocdev": {"gpio/internal/"},
		"github.com/facebook/time":          {"timesync/internal/"},
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if under(p.ImportPath, "middleware") {
				for _, h := range harness {
					if under(imp, h) {
						t.Errorf("%s imports harness package %s: middleware must import none of the harness", p.ImportPath, imp)
					}
				}
			}
			if under(imp, "suites") && !under(p.ImportPath, "suites") {
				t.Errorf("%s imports %s: nothing outside suites/ may import suites/", p.ImportPath, imp)
			}
			for v, allowed := range vendors {
				if !strings.HasPrefix(imp, v) {
					continue
				}
				ok := slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(p.ImportPath, mod+"/"+a) })
				if !ok {
					t.Errorf("%s imports %s directly; only %v may", p.ImportPath, imp, allowed)
				}
			}
		}
		if p.ImportPath == mod+"/cmd/hilrig" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/onsi/") {
					t.Errorf("the hilrig binary links %s: test matchers must stay out of it", d)
				}
			}
		}
	}
}
