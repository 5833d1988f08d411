//go:build linux

package middleware_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Corrupt, truncated and foreign-version segment files are rejected with
// an error that names the file and says what is wrong.
func TestBadSegmentsRejected(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "bad", d)
	good := middleware.Contract{Topic: "good", MaxPayload: 128, Transport: middleware.TransportShm}
	openPub(t, n, good, nil) // creates the segment; Node.Close closes it
	img, err := os.ReadFile(middleware.SegmentPath("", d, good.Topic))
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(img)) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated: 0 bytes"},
		{"truncated header", img[:1000], "truncated: 1000 bytes"},
		{"truncated slots", img[:len(img)-64], "truncated: file has"},
		{"magic", mut(func(b []byte) []byte { copy(b, "NOTHILRG"); return b }), "wrong magic"},
		{"version", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 99); return b }), "layout version 99"},
		{"checksum", mut(func(b []byte) []byte { b[32]++; return b }), "header checksum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh topic name per case so the file path is not one our
			// process already has mapped; the header's own topic is "good",
			// so a file that passed validation would fail on the contract.
			topic := "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			path := middleware.SegmentPath("", d, topic)
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			c := good
			c.Topic = topic
			start := time.Now()
			_, err := n.NewSubscriber(c, nil)
			if !errors.Is(err, middleware.ErrBadSegment) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant ErrBadSegment naming %s and saying %q", err, path, tc.want)
			}
			if el := time.Since(start); el > 900*time.Millisecond { // waiting for a creator takes ≥ InitWait (1 s); a loaded host may stall us for less
				t.Errorf("rejecting an unused bad file took %v (waited for a creator nobody is)", el)
			}
			t.Log(err)
		})
	}
	t.Run("contract", func(t *testing.T) {
		path := middleware.SegmentPath("", d, "other")
		if err := os.WriteFile(path, img, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		_, err := n.NewSubscriber(middleware.Contract{Topic: "other", MaxPayload: 128}, nil)
		if !errors.Is(err, middleware.ErrContract) || !strings.Contains(err.Error(), `segment has topic good, contract says other`) {
			t.Fatalf("got %v", err)
		}
	})
}

// A 10 MiB frame goes through the loan path and the copy path intact.
func TestTenMiBFrame(t *testing.T) {
	const size = 10 << 20
	for _, tc := range transports[:2] {
		t.Run(tc.name, func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "big", d)
			c := middleware.Contract{Topic: "cam/raw", MaxPayload: size, Transport: tc.tr}
			sub, pub := openPair(t, n, c)
			l, err := pub.Loan()
			if err != nil {
				t.Fatal(err)
			}
			fillPattern(l.Bytes(), 1)
			if err := l.Publish(size); err != nil {
				t.Fatal(err)
			}
			frame := make([]byte, size)
			fillPattern(frame, 2)
			if err := pub.Send(frame); err != nil {
				t.Fatal(err)
			}
			// Depth 1: the subscriber sees the newest frame and counts one lost.
			ctx := context.Background()
			var tag uint64
			var ok bool
			var lost uint64
			if err := sub.Next(ctx, func(m *middleware.Message) { tag, ok = checkPattern(m.Payload); lost = m.Lost }); err != nil {
				t.Fatal(err)
			}
			if !ok || tag != 2 || lost != 1 {
				t.Fatalf("10 MiB frame: tag %d intact %v lost %d", tag, ok, lost)
			}
		})
	}
}

// `shm clean` removes only segments no process uses: a segment whose
// publisher process was SIGKILLed goes, one we hold stays.
func TestCleanStaleRemovesOnlyStale(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "clean", d)
	live := middleware.Contract{Topic: "live", MaxPayload: 8, Transport: middleware.TransportShm}
	stale := middleware.Contract{Topic: "stale", MaxPayload: 8, Transport: middleware.TransportShm}
	openPub(t, n, live, nil) // a live segment; Node.Close closes it
	cmd, out := helperCmd(t, "pubhold", helperEnvFor(d, stale, 0)...)
	expectLine(t, out, "ready")
	stalePath := middleware.SegmentPath("", d, stale.Topic)
	livePath := middleware.SegmentPath("", d, live.Topic)
	mine := func() map[string]middleware.SegmentInfo {
		segs, err := middleware.ListSegments("")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]middleware.SegmentInfo{}
		for _, s := range segs {
			if s.Domain == d {
				m[s.Path] = s
			}
		}
		return m
	}
	segs := mine()
	if s := segs[stalePath]; s.Stale() || !s.PublisherAlive || s.PublisherPID != cmd.Process.Pid {
		t.Fatalf("segment of a live child: %+v", s)
	}
	removed, err := middleware.CleanStale("")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, stalePath) || slices.Contains(removed, livePath) {
		t.Fatalf("clean removed a live segment: %v", removed)
	}
	cmd.Process.Kill()
	cmd.Wait()
	segs = mine()
	if s := segs[stalePath]; !s.Stale() || s.PublisherAlive {
		t.Fatalf("segment of a SIGKILLed child: %+v", s)
	}
	if s := segs[livePath]; s.Stale() || !s.PublisherAlive {
		t.Fatalf("our own segment: %+v", s)
	}
	removed, err = middleware.CleanStale("")
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, r := range removed {
		if strings.HasPrefix(filepath.Base(r), "hilrig."+d+".") {
			ours = append(ours, r)
		}
	}
	if len(ours) != 1 || ours[0] != stalePath {
		t.Fatalf("clean removed %v, want exactly %s", ours, stalePath)
	}
	if _, err := os.Stat(livePath); err != nil {
		t.Fatalf("live segment gone: %v", err)
	}
}
