package shmtool_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/middleware/shmtool"
)

func TestLsAndClean(t *testing.T) {
	dir := t.TempDir() // segments live in a private dir: no interference with /dev/shm
	n, err := middleware.OpenNode("tool", &middleware.NodeOptions{Domain: "tooltest", ShmDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := middleware.Contract{Topic: "cam/front", MaxPayload: 1024, Reliability: middleware.Reliable}
	pub, err := n.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := n.NewSubscriber(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := pub.Send([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "hilrig.tooltest.junk")
	os.WriteFile(junk, []byte("garbage"), 0o600)
	var out bytes.Buffer
	if err := shmtool.Run(context.Background(), []string{"ls", "--dir", dir, "-v"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cam/front", "in-use", "reliable", "1/1", "stale,bad", "truncated: 7 bytes", "delivered 0", "node \"tool\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ls output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := shmtool.Run(context.Background(), []string{"clean", "--dir", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed "+junk) || strings.Count(out.String(), "removed ") != 1 {
		t.Fatalf("clean output:\n%s", out.String())
	}
	if _, err := os.Stat(middleware.SegmentPath(dir, "tooltest", c.Topic)); err != nil {
		t.Fatalf("in-use segment removed: %v", err)
	}
	if err := shmtool.Run(context.Background(), []string{"frob"}, &out, &out); !errors.Is(err, shmtool.ErrUsage) {
		t.Fatalf("bad sub-command: %v", err)
	}
	pub.Close()
	sub.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, "hilrig.*")); len(left) != 0 {
		t.Fatalf("closing the last user left %v", left)
	}
}
