//go:build linux

package middleware_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/tracing/counters"
)

// BenchmarkShmHugePages measures one Send + Next on shm, the subscriber
// copying the payload out, with the slots on 2 MiB transparent huge
// pages (NodeOptions.HugePages) against 4 KiB pages, interleaved in
// batches (alternating which goes first) within one run so the shared
// machine's noise falls on both alike. Both segments sit on one private
// tmpfs mounted huge=advise (root; /dev/shm is left alone), so the page
// size is the only difference. Reported per payload: huge_ns/msg,
// 4k_ns/msg, their ratio huge/4k (below 1: huge pages are faster), and
// thp_MiB, what smaps says the huge segment got (the benchmark stops if
// it got none, or if the baseline got any). Compare ratios from one run,
// not absolute ns.
func BenchmarkShmHugePages(b *testing.B) {
	dir := adviseTmpfs(b)
	for _, size := range []int{64 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("payload=%dKiB", size>>10), func(b *testing.B) { benchHuge(b, dir, size) })
	}
}

type hugePair struct {
	node *middleware.Node
	pub  *middleware.Publisher
	sub  *middleware.Subscriber
}

func benchHuge(b *testing.B, dir string, size int) {
	mk := func(name string, huge bool) hugePair {
		// One domain per pair: each gets its own segment file.
		n, err := middleware.OpenNode(name, &middleware.NodeOptions{Domain: fmt.Sprintf("%s%d", name, size>>10), ShmDir: dir, HugePages: huge})
		if err != nil {
			b.Fatal(err)
		}
		// Enough slots that the ring spans several 2 MiB pages (a
		// segment under 2 MiB, e.g. 21 slots of 64 KiB, gets none).
		c := middleware.Contract{Topic: "huge", MaxPayload: size, Transport: middleware.TransportShm, Depth: max(4, (8<<20)/size)}
		sub, err := n.NewSubscriber(c, nil)
		if err != nil {
			n.Close()
			b.Fatal(err)
		}
		pub, err := n.NewPublisher(c, nil)
		if err != nil {
			n.Close()
			b.Fatal(err)
		}
		b.Cleanup(func() {
			pub.Close()
			sub.Close()
			if err := n.Close(); err != nil {
				b.Error(err)
			}
		})
		return hugePair{n, pub, sub}
	}
	huge, small := mk("huge", true), mk("small", false)
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	rbuf := make([]byte, 0, size)
	fn := func(m *middleware.Message) { rbuf = m.CopyPayload(rbuf) }
	const batch = 16
	round := func(p hugePair) time.Duration { return sendNext(b, p.pub, p.sub, payload, fn, batch) }
	// Touch every slot of both rings, then check what pages they got.
	for range (8<<20)/size/batch + 1 {
		round(huge)
		round(small)
	}
	hugeKB, smallKB := thpUnder(b, dir, "hilrig.huge"), thpUnder(b, dir, "hilrig.small")
	if hugeKB == 0 {
		b.Fatalf("the huge-page segment got no transparent huge pages (smaps); nothing to compare")
	}
	if smallKB != 0 {
		b.Fatalf("the 4 KiB baseline got %d kB of transparent huge pages", smallKB)
	}
	var tHuge, tSmall time.Duration
	var msgs int64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always runs with the
		// caches the other left.
		if i%2 == 0 {
			tHuge += round(huge)
			tSmall += round(small)
		} else {
			tSmall += round(small)
			tHuge += round(huge)
		}
		msgs += batch
	}
	if len(rbuf) != size || rbuf[size-1] != byte(size-1) {
		b.Fatalf("received %d bytes, last %d", len(rbuf), rbuf[len(rbuf)-1])
	}
	h, s := float64(tHuge.Nanoseconds())/float64(msgs), float64(tSmall.Nanoseconds())/float64(msgs)
	b.ReportMetric(h, "huge_ns/msg")
	b.ReportMetric(s, "4k_ns/msg")
	b.ReportMetric(h/s, "huge/4k")
	b.ReportMetric(float64(hugeKB)/1024, "thp_MiB")
}

// thpUnder sums the transparent-huge-page kB of this process's mappings
// of files under dir whose name starts with prefix.
func thpUnder(b *testing.B, dir, prefix string) int64 {
	b.Helper()
	ms, err := counters.Mappings(0, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var kb int64
	for _, m := range ms {
		if strings.HasPrefix(m.Path, dir+"/"+prefix) {
			kb += m.THPKB
		}
	}
	return kb
}

// adviseTmpfs mounts a private tmpfs with huge=advise on a fresh
// directory and unmounts it when the benchmark ends; it skips, saying
// why, without root or tmpfs THP.
func adviseTmpfs(b *testing.B) string {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root to mount a tmpfs with huge=advise")
	}
	if s, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/shmem_enabled"); err != nil || strings.Contains(string(s), "[deny]") {
		b.Skipf("no transparent huge pages for tmpfs (shmem_enabled %q, %v)", strings.TrimSpace(string(s)), err)
	}
	return mountTmpfs(b, "hilrig-bench-huge", "size=256m,huge=advise", "a tmpfs with huge=advise")
}

// sendNext sends payload and takes it with fn, n times in turn, and
// returns how long that took (wall clock); it fails b on an error.
func sendNext(b *testing.B, pub *middleware.Publisher, sub *middleware.Subscriber, payload []byte, fn func(*middleware.Message), n int) time.Duration {
	t0 := time.Now()
	for range n {
		sendTake(b, pub, sub, payload, fn)
	}
	return time.Since(t0)
}
