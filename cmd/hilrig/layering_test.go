package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/hilrig/hilrig"

type pkgInfo struct {
	ImportPath   string
	Imports      []string
	TestImports  []string // of the package's _test.go files in the package itself
	XTestImports []string // of its external (package x_test) test files
	Deps         []string
}

// listPackages runs `go list -deps=false -json ./...` from the module root.
func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Deps", mod+"/...")
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

// TestLayering enforces the data-flow rules of the brief and the house
// style. Data flows one way:
//
//	fixtures (rack description) → rig → deploy → agent → middleware, gpio,
//	timesync → report
//
// so a package may import only packages to its right (and the leaves:
// netns, internal/…). middleware imports none of the harness; nothing
// imports suites; the ROS 2 side, ros2/, imports nothing of the rig side
// (its codec ros2/rosmsg is a leaf; ros2/rostopic, the topic declaration,
// is what agentproto, agent, fixtures and rig take from it); suites reach boards only through the rig (the fault kit
// is the single package below suites/ that may drive the middleware and the
// deployers in-process); vendor libraries are imported only from their
// internal leaves; and the hilrig binary does not link gomega.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	under := func(p, dir string) bool {
		return p == mod+"/"+dir || strings.HasPrefix(p, mod+"/"+dir+"/")
	}
	underAny := func(p string, dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return under(p, d) })
	}
	harness := []string{"gpio", "timesync", "scopes", "fixtures", "suites", "report", "rig", "agent", "agentproto", "deploy", "vmboard", "hostinfo", "bench", "ros2", "recording", "dut"}
	// Package tree → trees it must not import (the flow's left-hand side).
	upstream := map[string][]string{
		"fixtures":   {"rig", "deploy", "agent", "agentproto", "vmboard", "middleware", "gpio", "timesync", "scopes", "suites"},
		"deploy":     {"rig", "suites"},
		"agent":      {"rig", "deploy", "vmboard", "fixtures", "suites", "scopes", "peers"},
		"peers":      {"rig", "deploy", "vmboard", "fixtures", "suites", "scopes", "gpio", "timesync"},
		"agentproto": {"rig", "deploy", "agent", "vmboard", "fixtures", "suites", "scopes"},
		"vmboard":    {"rig", "agent", "suites"},
		"gpio":       {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "suites"},
		"timesync":   {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "suites"},
		"scopes":     {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "suites"},
		"report":     {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "suites", "hostinfo", "bench"},
		"hostinfo":   {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "suites", "bench"},
		"tracing":    {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "suites"},
		"bench":      {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "gpio", "timesync", "scopes", "suites", "report"},
		"ros2":       {"rig", "deploy", "vmboard", "fixtures", "scopes", "suites"},
		// The bridge's configuration: the rig writes it, so no agent.
		"ros2/bridgeconf": {"rig", "deploy", "agent", "vmboard", "fixtures", "scopes", "suites", "peers"},
		// The codec is a leaf: the ROS 2 peers and bridge build on it.
		"ros2/rosmsg": {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "report", "suites", "peers", "netns", "hostinfo", "bench", "recording"},
		// Recordings (MCAP) are a leaf beside the codec: the CLI decodes
		// ROS 2 payloads with ros2/rosmsg, nothing else of the harness.
		"recording": {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "report", "suites", "peers", "netns", "hostinfo", "bench", "ros2/ros2cli"},
		"netns":     {"rig", "deploy", "agent", "agentproto", "vmboard", "fixtures", "middleware", "gpio", "timesync", "scopes", "report", "suites"},
		// The DUT runner sits beside the rig, not under it: the caller
		// passes the rig's placement (dut.Placement).
		"dut": {"rig", "agent", "agentproto", "vmboard", "scopes", "suites", "bench"},
		// The controller runs flows on boards; the controller-host
		// ping-pong (bench) is the steps' (issue 32).
		"rig": {"suites", "bench"},
	}
	// Below suites/, boards are reached only through the rig: no deployer,
	// agent, QEMU board or middleware directly. faultkit is the one named
	// exception: fault specs corrupt segments and forge datagrams in-process.
	boardSide := []string{"deploy", "agent", "vmboard", "middleware"}
	const faultKit = mod + "/suites/internal/faultkit"
	// The spec packages (suites/<area>, not suites/internal) also make no
	// board, namespace, simulated chip or instrument, nor a ptp4l pair, of
	// their own: the rig opens those.
	specBoardSide := append(slices.Clip(boardSide), "netns", "gpio/gpiosim", "scopes/scopesim", "timesync/ptprig")
	// What a spec package may still import from specBoardSide, each with
	// its reason. Listed here so that a new one is a reviewed decision.
	specExceptions := map[string][]string{
		// The fault specs drive the bus in-process (shm segments, a seeded
		// UDP fault layer), the SCPI client against its simulator and a
		// real ptp4l pair whose daemons they kill.
		"suites/faults": {"middleware", "scopes/scopesim", "timesync/ptprig"},
	}
	// Test kits that build the binary or stand in for a board's SSH reach;
	// a suite's tests may use them (they start no agent).
	testKits := []string{"deploy/deploytest", "deploy/sshdtest"}
	// The leaves under internal/ import nothing of the module outside
	// internal/, tests included: a test kit lives beside what it tests.
	isLeaf := func(p string) bool { return strings.HasPrefix(p, mod+"/internal/") }
	// Vendor module → the only package trees allowed to import it directly.
	vendors := map[string][]string{
		"github.com/warthog618/go-gpiocdev": {"gpio/internal/"},
		"github.com/facebook/time":          {"timesync/internal/"},
		"modernc.org/sqlite":                {"report/store/sqlite"},
		"github.com/jackc/pgx":              {"report/store/postgres", "report/store/pgtest"},
		"github.com/prometheus/":            {"report/live"},
		"github.com/klauspost/compress":     {"recording/mcap"},
		"github.com/pierrec/lz4":            {"recording/mcap"},
	}
	for _, p := range pkgs {
		for _, imp := range allImports(p) {
			isTest := !slices.Contains(p.Imports, imp)
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
			for tree, banned := range upstream {
				if under(p.ImportPath, tree) && underAny(imp, banned) {
					t.Errorf("%s imports %s: data flows rack → rig → deploy → agent → middleware/gpio/timesync → report, never back", p.ImportPath, imp)
				}
			}
			excepted := underAny(imp, specExceptions[strings.TrimPrefix(p.ImportPath, mod+"/")]) || isTest && underAny(imp, testKits)
			if under(p.ImportPath, "suites") && p.ImportPath != faultKit && underAny(imp, boardSide) && !excepted {
				t.Errorf("%s imports %s: suites reach boards only through the rig (faultkit and the listed spec exceptions aside)", p.ImportPath, imp)
			}
			if under(p.ImportPath, "suites") && !under(p.ImportPath, "suites/internal") && underAny(imp, specBoardSide) && !excepted {
				t.Errorf("%s imports %s: spec files reach boards, namespaces, simulators and ptp4l only through the rig", p.ImportPath, imp)
			}
			if isLeaf(p.ImportPath) && strings.HasPrefix(imp, mod+"/") && !isLeaf(imp) {
				t.Errorf("%s imports %s: the internal/ leaves import no module package outside internal/ (tests included; a test kit lives beside what it tests)", p.ImportPath, imp)
			}
			for v, allowed := range vendors {
				if !strings.HasPrefix(imp, v) {
					continue
				}
				ok := slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(p.ImportPath, mod+"/"+a) })
				// The in-board kernel conformance tests exercise the vendor
				// PHC library itself, in a test file only.
				ok = ok || isTest && v == "github.com/facebook/time" && p.ImportPath == mod+"/vmboard/boardtest"
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

// TestHilrigLinksNoPeers: the peer adapters (peers/…, cgo) are linked
// only into cmd/hilrig-peer. Even with every peer build tag set, the
// hilrig binary depends on no peers/ package, and it builds with
// CGO_ENABLED=0 (static).
func TestHilrigLinksNoPeers(t *testing.T) {
	cmd := exec.Command("go", "list", "-tags", "cyclonedds,fastdds,iceoryx", "-deps", "-f", "{{.ImportPath}}", mod+"/cmd/hilrig")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %d dependencies", len(deps))
	}
	for _, d := range deps {
		if d == mod+"/peers" || strings.HasPrefix(d, mod+"/peers/") || d == "runtime/cgo" {
			t.Errorf("the hilrig binary links %s: peers and cgo belong in cmd/hilrig-peer", d)
		}
	}
	build := exec.Command("go", "build", "-tags", "cyclonedds,fastdds,iceoryx", "-o", os.DevNull, mod+"/cmd/hilrig")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/hilrig: %v\n%s", err, out)
	}
}

// TestOneCaseConstructor: report.NewCase is the one constructor of a
// report case (issue 32): no production file outside report/ composes a
// report.Case literal, so every case's route, spec and results arrive as
// typed values through it. Test files may build cases as fixtures.
func TestOneCaseConstructor(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) < 10 {
		t.Fatalf("go list found only %d packages", len(dirs))
	}
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			reportName := ""
			for _, imp := range file.Imports {
				if imp.Path.Value == `"`+mod+`/report"` {
					reportName = "report"
					if imp.Name != nil {
						reportName = imp.Name.Name
					}
				}
			}
			if reportName == "" {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Case" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == reportName {
						t.Errorf("%s: composes a report.Case literal; build cases with report.NewCase(route, spec, results)", fset.Position(cl.Pos()))
					}
				}
				return true
			})
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files", checked)
	}
}

// allImports is what p's production files and both kinds of its test files
// import, without repeats: the layering holds for tests too, so a test kit
// cannot pull a package's tests up the flow.
func allImports(p pkgInfo) []string {
	all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
	slices.Sort(all)
	return slices.Compact(all)
}
