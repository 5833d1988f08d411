// Package pgtest runs a throw-away PostgreSQL cluster for tests and
// benchmarks: initdb and pg_ctl from Debian's postgresql package, run as
// the unprivileged user nobody (setpriv) in a fresh temporary directory,
// listening on 127.0.0.1 only (or, with [StartIn], on every address of a
// network namespace the test made), stopped and removed on cleanup.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
)

// Cluster is a running throw-away cluster.
type Cluster struct {
	tb      testing.TB
	bin     string
	dir     string
	Port    int
	stopped bool
	// netns, if set, is the network namespace the server runs in
	// (StartIn), listening on all its addresses.
	netns string
}

// bindir finds the newest /usr/lib/postgresql/N/bin with initdb.
func bindir() string {
	ds, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(ds) == 0 {
		return ""
	}
	sort.Strings(ds)
	return filepath.Dir(ds[len(ds)-1])
}

// nobody is the unprivileged user the server runs as (postgres refuses
// to run as root).
const nobody = 65534

// Start makes and starts a cluster, or skips tb when PostgreSQL is not
// installed (Debian package postgresql; .ci/test installs it). The cluster
// is removed when tb ends.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	return start(tb, "")
}

// StartIn is Start with the server inside network namespace netns (made
// by the test, e.g. with package netns), listening on port 5432 of every
// address there and trusting every client, so processes in other
// namespaces reach it over veth links as other hosts would. Connect with
// [Cluster.DSNAt]. Needs root.
func StartIn(tb testing.TB, netns string) *Cluster {
	tb.Helper()
	return start(tb, netns)
}

func start(tb testing.TB, netns string) *Cluster {
	tb.Helper()
	bin := bindir()
	if bin == "" {
		tb.Skip("PostgreSQL not installed (Debian package postgresql)")
	}
	dir, err := os.MkdirTemp("", "hilrig-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{tb: tb, bin: bin, dir: dir, netns: netns}
	tb.Cleanup(func() {
		c.Stop()
		os.RemoveAll(dir)
	})
	if err := os.Chown(dir, nobody, nobody); err != nil {
		tb.Fatal(err)
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", "hilrig", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	if netns != "" {
		// Only the test's namespaces can reach it.
		hba := filepath.Join(c.data(), "pg_hba.conf")
		f, err := os.OpenFile(hba, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("host all all 0.0.0.0/0 trust\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			tb.Fatal(err)
		}
		c.Port = 5432 // the namespace is the test's own: nothing else listens there
		if err := c.Start(); err != nil {
			tb.Fatal(err)
		}
		if out, err := c.run("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "hilrig", "-d", "postgres",
			"-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE hilrig"); err != nil {
			tb.Fatalf("create database: %v\n%s", err, out)
		}
		return c
	}
	c.Port = testkit.FreePort(tb)
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("pgx", c.dsn("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE hilrig"); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups",
		filepath.Join(c.bin, tool)}, args...)
	name := "setpriv"
	if c.netns != "" {
		name, full = "ip", append([]string{"netns", "exec", c.netns, "setpriv"}, full...)
	}
	cmd := exec.CommandContext(ctx, name, full...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=" + c.dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// Start (re)starts the server and waits until it accepts connections.
func (c *Cluster) Start() error {
	listen := "127.0.0.1"
	if c.netns != "" {
		listen = "'*'"
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=%s -c fsync=off -c max_connections=50", c.Port, c.dir, listen)
	out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	c.stopped = false
	return nil
}

// Stop stops the server at once (immediate mode: like a crash).
func (c *Cluster) Stop() {
	if c.stopped {
		return
	}
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		c.tb.Logf("pg_ctl stop: %v\n%s", err, out)
	}
	c.stopped = true
}

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://hilrig@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// DSNAt is the URL of the cluster's database "hilrig" at host (an address
// of the namespace of [StartIn]).
func (c *Cluster) DSNAt(host string) string {
	return fmt.Sprintf("postgres://hilrig@%s/hilrig?sslmode=disable", net.JoinHostPort(host, strconv.Itoa(c.Port)))
}

// DSN is the URL of the cluster's database "hilrig".
func (c *Cluster) DSN() string { return c.dsn("hilrig") }

// NewDatabase creates another empty database and returns its URL.
func (c *Cluster) NewDatabase(name string) string {
	db, err := sql.Open("pgx", c.dsn("postgres"))
	if err != nil {
		c.tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		c.tb.Fatalf("create database %s: %v", name, err)
	}
	return c.dsn(name)
}
