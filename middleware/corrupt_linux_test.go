package middleware_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Corrupted segments (issue 14, item 6). A publisher and a subscriber run
// as two helper processes; this process, which never maps the segment,
// overwrites or truncates the file under them. Each end must report
// ErrCorrupt naming the file within a bounded time: no crash, no hang, no
// torn payload delivered without the error.

// corruptChild is the helper role of those tests.
//
// cpub publishes pattern messages (Seq = tag) best effort; with
// HILRIG_COUNT > 0 it publishes that many, prints "published" and waits
// for stdin to close, else it publishes until an error. It ends with
// "result sent=N err=E".
//
// csub subscribes and prints "ready"; with HILRIG_GATE it then waits for
// a line on stdin. It reads until an error (or 30 s) and prints "got N"
// once N = HILRIG_COUNT messages arrived, then
// "result delivered=D torn=T flagged=F err=E": T counts torn payloads
// (pattern broken, or payload of another message than the header says)
// that were not followed by ErrCorrupt from the same Next, F those that
// were.
func corruptChild(n *middleware.Node, c middleware.Contract, role string) error {
	count, _ := strconv.Atoi(os.Getenv("HILRIG_COUNT"))
	if role == "cpub" {
		p, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: time.Second})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		buf := make([]byte, c.MaxPayload)
		sent := 0
		for i := 1; count == 0 || i <= count; i++ {
			sz := 8 + i*37%(c.MaxPayload-8)
			fillPattern(buf[:sz], uint64(i))
			if err = p.Send(buf[:sz]); err != nil {
				break
			}
			sent++
			if count == 0 && i%16 == 0 {
				time.Sleep(50 * time.Microsecond) // pace: about 100k/s is plenty
			}
		}
		if err == nil {
			fmt.Println("published")
			io.Copy(io.Discard, os.Stdin)
		}
		fmt.Printf("result sent=%d err=%v\n", sent, err)
		return nil
	}
	s, err := n.NewSubscriber(c, nil)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if os.Getenv("HILRIG_GATE") != "" {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var delivered, torn, flagged int
	for {
		bad := false
		err = s.Next(ctx, func(m *middleware.Message) {
			if tag, ok := checkPattern(m.Payload); !ok || tag != m.Header.Seq {
				bad = true
			}
		})
		if bad {
			if errors.Is(err, middleware.ErrCorrupt) {
				flagged++
			} else {
				torn++
			}
		}
		if err != nil {
			break
		}
		delivered++
		if delivered == count {
			fmt.Println("got", count)
		}
	}
	fmt.Printf("result delivered=%d torn=%d flagged=%d err=%v\n", delivered, torn, flagged, err)
	return nil
}

// corruptProc is a helper process of the corruption tests.
type corruptProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr strings.Builder
}

func startCorruptProc(t *testing.T, role string, env ...string) *corruptProc {
	t.Helper()
	p := &corruptProc{lines: make(chan string, 16)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + role}, env...)...)
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

// line waits up to d for the next line starting with prefix (other lines
// are skipped). On EOF or timeout it fails the test, saying whether the
// process died of a signal (SIGSEGV, SIGBUS) or hung.
func (p *corruptProc) line(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				err := p.cmd.Wait()
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
						t.Fatalf("%s died of %v waiting for %q:\n%s", p.cmd.Env[len(os.Environ())], ws.Signal(), prefix, tail(p.stderr.String()))
					}
				}
				t.Fatalf("%s ended (%v) before saying %q:\n%s", p.cmd.Env[len(os.Environ())], err, prefix, tail(p.stderr.String()))
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("%s hung: no %q within %v", p.cmd.Env[len(os.Environ())], prefix, d)
		}
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// wantCorrupt checks a result line: the error is ErrCorrupt naming path,
// and no torn payload went unreported.
func wantCorrupt(t *testing.T, who, res, path string) {
	t.Helper()
	if !strings.Contains(res, middleware.ErrCorrupt.Error()) || !strings.Contains(res, path) {
		t.Errorf("%s: %s\nwant ErrCorrupt naming %s", who, res, path)
	}
	if strings.Contains(res, "torn=") && !strings.Contains(res, " torn=0 ") {
		t.Errorf("%s: torn payloads delivered without ErrCorrupt: %s", who, res)
	}
}

// corruptContract: 8 slots of up to 2 KiB (2112 bytes with the header)
// starting at 4096, keep-last 8 so a subscriber reads every entry.
var corruptContract = middleware.Contract{Topic: "corrupt/t", MaxPayload: 2048, Slots: 8, Depth: 8, Transport: middleware.TransportShm}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// finish closes the publisher's stdin, waits for both helpers to end
// and removes the segment (two ends closing at once may each leave it to
// the other).
// startCorruptPair starts, on a fresh domain, a subscriber helper
// expecting subN messages (extra env added) and waits for it to be
// ready, then a publisher helper of pubN (0: streaming) and waits for its
// pubReady line; it returns the topic's segment path.
func startCorruptPair(t *testing.T, c middleware.Contract, subN, pubN int, pubReady string, subEnv ...string) (path string, pub, sub *corruptProc) {
	t.Helper()
	d := testDomain(t)
	path = middleware.SegmentPath("", d, c.Topic)
	sub = startCorruptProc(t, "csub", append(helperEnvFor(d, c, subN), subEnv...)...)
	sub.line(t, "ready", 20*time.Second)
	pub = startCorruptProc(t, "cpub", helperEnvFor(d, c, pubN)...)
	pub.line(t, pubReady, 20*time.Second)
	return path, pub, sub
}

// resultCorrupt waits for p's result line and wants it an ErrCorrupt
// naming path.
func resultCorrupt(t *testing.T, who string, p *corruptProc, path string) string {
	t.Helper()
	res := p.line(t, "result", 15*time.Second)
	wantCorrupt(t, who, res, path)
	return res
}

// bothCorrupt wants the subscriber's and then the publisher's result an
// ErrCorrupt naming path, logs both and finishes the pair.
func bothCorrupt(t *testing.T, path string, pub, sub *corruptProc) {
	t.Helper()
	res := resultCorrupt(t, "subscriber", sub, path)
	pres := resultCorrupt(t, "publisher", pub, path)
	t.Log(res)
	t.Log(pres)
	finish(t, path, pub, sub)
}

func finish(t *testing.T, path string, procs ...*corruptProc) {
	t.Helper()
	for _, p := range procs {
		p.in.Close()
	}
	for _, p := range procs {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v\n%s", p.cmd.Env[len(os.Environ())], err, tail(p.stderr.String()))
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not exit", p.cmd.Env[len(os.Environ())])
		}
	}
	middleware.RemoveSegment(path)
}

func le64(v uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

// Eight bytes into the head word (offset 320) of a segment whose
// subscriber has read everything and waits: the old reader took the slot
// index from it unchecked and died of SIGSEGV, or waited for ever at a
// position the publisher will never reach.
func TestCorruptHeadWord(t *testing.T) {
	c := corruptContract
	for _, val := range []uint64{
		0x0123456789abfffe, // slot index far outside the pool
		0x0123456789ab0003, // a slot of the pool, position far ahead
		0x0000000000010003, // position 1: behind what was read
	} {
		t.Run(fmt.Sprintf("%#x", val), func(t *testing.T) {
			path, pub, sub := startCorruptPair(t, c, 5, 5, "published")
			sub.line(t, "got 5", 20*time.Second)
			writeAt(t, path, 320, le64(val))
			res := resultCorrupt(t, "subscriber", sub, path)
			t.Log(res)
			finish(t, path, pub, sub)
		})
	}
}

// Eight bytes into the ring entry (offset 2560, entry 0) a subscriber
// that is behind reads next: the old reader took it for "lapped, go
// round again" and spun at 100% CPU for ever, ignoring its context.
func TestCorruptRingEntry(t *testing.T) {
	c := corruptContract
	for _, val := range []uint64{
		0xfedcba9876543210, // position far ahead
		0x0000000000000000, // empty
		0x0000000000090005, // position 9 (same entry, one lap on) while head is 3
		0x000000000001ffff, // position 1, slot far outside the pool
	} {
		t.Run(fmt.Sprintf("%#x", val), func(t *testing.T) {
			path, pub, sub := startCorruptPair(t, c, 3, 3, "published", "HILRIG_GATE=1")
			writeAt(t, path, 2560, le64(val))
			fmt.Fprintln(sub.in, "go")
			res := resultCorrupt(t, "subscriber", sub, path)
			t.Log(res)
			finish(t, path, pub, sub)
		})
	}
}

// The subscriber table (offsets 512..2560) overwritten with random bytes
// while a publisher streams to a subscriber: the old publisher took the
// live subscriber for dead, cleared its hold and reused the slot it was
// reading (torn payloads in the callback). Both ends must report
// ErrCorrupt, and no torn payload may reach a callback unreported.
func TestCorruptSubscriberTable(t *testing.T) {
	for _, rel := range []middleware.Reliability{middleware.BestEffort, middleware.Reliable} {
		c := corruptContract
		c.Reliability = rel
		t.Run(fmt.Sprint("reliable=", rel == middleware.Reliable), func(t *testing.T) {
			path, pub, sub := startCorruptPair(t, c, 200, 0, "ready")
			sub.line(t, "got 200", 20*time.Second)
			rng := rand.New(rand.NewPCG(14, 6))
			table := make([]byte, 2048)
			for i := range table {
				table[i] = byte(rng.Uint32())
			}
			writeAt(t, path, 512, table)
			bothCorrupt(t, path, pub, sub)
		})
	}
}

// A live segment truncated under both ends: the old code died of SIGBUS
// in both. Each must return ErrCorrupt naming the file instead.
func TestCorruptTruncatedLive(t *testing.T) {
	c := corruptContract
	for _, size := range []int64{0, 4096, 4096 + 3*2112} {
		t.Run(fmt.Sprint(size, " bytes"), func(t *testing.T) {
			path, pub, sub := startCorruptPair(t, c, 200, 0, "ready")
			sub.line(t, "got 200", 20*time.Second)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			bothCorrupt(t, path, pub, sub)
		})
	}
}

// Stats after the counters in a live segment were overwritten (issue 31,
// finding 10): the old Stats read them from the segment unchecked and
// returned Delivered = 18388096062736361663. The subscriber's counters
// (table entry 0 at 512: delivered, lost, overruns, torn, epochs at
// +32..+72), then the publisher's (448..480) and then the whole table with
// random bytes are overwritten; Stats must keep returning what this
// process counted. The table and publisher block sit at fixed offsets
// whatever the contract.
func TestStatsAfterCountersCorrupted(t *testing.T) {
	p := newClosePair(t, middleware.TransportShm)
	pub, sub := p.pub, p.sub
	const count = 5
	ctx := ctxT(t, 10e9)
	for i := range count {
		if err := pub.Send([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := sub.Next(ctx, func(*middleware.Message) {}); err != nil {
			t.Fatal(err)
		}
	}
	wantSub, wantPub := sub.Stats(), pub.Stats()
	if wantSub.Delivered != count || wantPub.Published != count {
		t.Fatalf("before: %+v, %+v", wantSub, wantPub)
	}
	garbage := le64(18388096062736361663) // what the probe read back
	table := make([]byte, 2048)
	rng := rand.New(rand.NewPCG(31, 10))
	for i := range table {
		table[i] = byte(rng.Uint32())
	}
	for _, w := range []struct {
		what string
		off  int64
		b    []byte
	}{
		{"subscriber counters", 512 + 32, bytes.Repeat(garbage, 5)},
		{"publisher counters", 448, bytes.Repeat(garbage, 4)},
		{"the whole subscriber table", 512, table},
	} {
		writeAt(t, p.path, w.off, w.b)
		if st := sub.Stats(); st != wantSub {
			t.Errorf("%s overwritten: subscriber Stats %+v, want %+v", w.what, st, wantSub)
		}
		if st := pub.Stats(); st != wantPub {
			t.Errorf("%s overwritten: publisher Stats %+v, want %+v", w.what, st, wantPub)
		}
	}
	// What the segment now holds is not this process's to repair: the
	// ends close, and the segment goes.
	sub.Close()
	pub.Close()
	middleware.RemoveSegment(p.path)
}
