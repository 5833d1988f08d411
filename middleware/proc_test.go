//go:build linux

package middleware_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// The helper process pattern: tests re-execute the test binary with
// -test.run=TestHelperProcess and HILRIG_HELPER set to a role.

const helperEnv = "HILRIG_HELPER"

// fillPattern writes a self-checking payload: 8-byte tag, then bytes
// derived from the tag. A torn message mixes two tags and fails check.
func fillPattern(b []byte, tag uint64) {
	binary.LittleEndian.PutUint64(b, tag)
	x := byte(tag*131 + 7)
	for i := 8; i < len(b); i++ {
		b[i] = x + byte(i)
	}
}

func checkPattern(b []byte) (uint64, bool) {
	if len(b) < 8 {
		return 0, false
	}
	tag := binary.LittleEndian.Uint64(b)
	x := byte(tag*131 + 7)
	for i := 8; i < len(b); i++ {
		if b[i] != x+byte(i) {
			return tag, false
		}
	}
	return tag, true
}

// helperCmd starts the test binary in role with extra env.
func helperCmd(t *testing.T, role string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return startHelper(t, nil, append([]string{helperEnv + "=" + role}, env...))
}

// startHelper starts the test binary's TestHelperProcess with env added
// (attr nil: an ordinary child), its stderr on ours, and returns its
// stdout. The child is killed and reaped when the test ends.
func startHelper(t *testing.T, attr *syscall.SysProcAttr, env []string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

// expectLine reads one line from a helper and fails unless it is want.
func expectLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() { s, err := r.ReadString('\n'); ch <- res{s, err} }()
	select {
	case got := <-ch:
		if got.err != nil || got.s != want+"\n" {
			t.Fatalf("helper said %q (%v), want %q", got.s, got.err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("helper did not say %q", want)
	}
}

func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		t.Skip("helper process for the multi-process tests")
	}
	err := runHelper(role)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperContract() middleware.Contract {
	c := middleware.Contract{Topic: os.Getenv("HILRIG_TOPIC"), Transport: middleware.TransportShm}
	c.MaxPayload, _ = strconv.Atoi(os.Getenv("HILRIG_MAX"))
	c.Slots, _ = strconv.Atoi(os.Getenv("HILRIG_SLOTS"))
	c.Depth, _ = strconv.Atoi(os.Getenv("HILRIG_DEPTH"))
	if os.Getenv("HILRIG_RELIABLE") == "1" {
		c.Reliability = middleware.Reliable
	}
	return c
}

// printOutcome reports, on stdout, how a helper role's try to open an
// endpoint ended: "ok" or "err: " and the error (the test reads it).
func printOutcome(err error) error {
	if err != nil {
		fmt.Println("err:", err)
	} else {
		fmt.Println("ok")
	}
	return nil
}

// readyUntilKilled is a helper role's end once its endpoint is open:
// it returns err if opening failed, else prints "ready" and waits to be
// killed.
func readyUntilKilled(err error) error {
	if err != nil {
		return err
	}
	fmt.Println("ready")
	time.Sleep(time.Hour) // until killed
	return nil
}

func runHelper(role string) error {
	if role == "mlock" {
		n, err := middleware.OpenNode("mlock", &middleware.NodeOptions{Domain: os.Getenv("HILRIG_DOMAIN"), Mlock: true})
		if err != nil {
			fmt.Println("err:", err)
			return nil
		}
		fmt.Println("ok")
		return n.Close()
	}
	if role == "smallshm" {
		return smallShmChild(os.Getenv("HILRIG_SHMDIR"), os.Getenv("HILRIG_DOMAIN"))
	}
	if os.Getenv(nsEnv) != "" {
		if err := enterContainer(os.Getenv(nsEnv)); err != nil {
			return err
		}
	}
	n, err := middleware.OpenNode("helper-"+role, &middleware.NodeOptions{Domain: os.Getenv("HILRIG_DOMAIN"), ShmDir: os.Getenv("HILRIG_SEGDIR")})
	if err != nil {
		return err
	}
	defer n.Close()
	c := helperContract()
	switch role {
	case "pubtry": // try to publish, report the outcome on stdout
		_, err := n.NewPublisher(c, nil)
		return printOutcome(err)
	case "cpub", "csub": // corrupt_test.go
		return corruptChild(n, c, role)
	case "pub": // publish HILRIG_COUNT pattern messages of varying size
		count, _ := strconv.Atoi(os.Getenv("HILRIG_COUNT"))
		p, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		return sendPatterns(p, c.MaxPayload, count)
	case "pubforever": // loan path, written in chunks: SIGKILL lands mid-write
		p, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: time.Hour})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		pat := make([]byte, c.MaxPayload)
		for tag := uint64(1); ; tag++ {
			l, err := p.Loan()
			if err != nil {
				return err
			}
			fillPattern(pat, tag)
			b := l.Bytes()
			for off := 0; off < len(b); off += 1024 {
				copy(b[off:], pat[off:min(off+1024, len(b))])
			}
			if err := l.Publish(len(b)); err != nil {
				return err
			}
		}
	case "pubhold": // publisher that stays alive until killed
		_, err := n.NewPublisher(c, nil)
		return readyUntilKilled(err)
	case "shrinkself": // see TestSegmentTruncatedAfterCreation
		return shrinkSelfChild(n, c)
	case "open": // try to subscribe, report the outcome on stdout
		_, err := n.NewSubscriber(c, nil)
		return printOutcome(err)
	case "subidle": // subscriber that registers and never reads
		_, err := n.NewSubscriber(c, nil)
		return readyUntilKilled(err)
	case "sub": // read HILRIG_COUNT messages and check them
		count, _ := strconv.Atoi(os.Getenv("HILRIG_COUNT"))
		s, err := n.NewSubscriber(c, nil)
		if err != nil {
			return err
		}
		fmt.Println("ready")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// HILRIG_STALL_EVERY=k: a 20 ms stall after every k-th message
		// (a slow consumer: a Reliable publisher waits, and checks
		// liveness while it waits).
		stall, _ := strconv.Atoi(os.Getenv("HILRIG_STALL_EVERY"))
		for i := 1; i <= count; i++ {
			var bad error
			if err := s.Next(ctx, func(m *middleware.Message) {
				if tag, ok := checkPattern(m.Payload); !ok || tag != uint64(i) || m.Header.Seq != uint64(i) || m.Lost != 0 {
					bad = fmt.Errorf("message %d: tag %d ok %v seq %d lost %d", i, tag, ok, m.Header.Seq, m.Lost)
				}
				if stall > 0 && i%stall == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}); err != nil {
				return err
			}
			if bad != nil {
				return bad
			}
		}
		fmt.Println("done")
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

func helperEnvFor(d string, c middleware.Contract, count int) []string {
	rel := "0"
	if c.Reliability == middleware.Reliable {
		rel = "1"
	}
	return []string{"HILRIG_DOMAIN=" + d, "HILRIG_TOPIC=" + c.Topic, "HILRIG_MAX=" + strconv.Itoa(c.MaxPayload),
		"HILRIG_SLOTS=" + strconv.Itoa(c.Slots), "HILRIG_DEPTH=" + strconv.Itoa(c.Depth), "HILRIG_RELIABLE=" + rel, "HILRIG_COUNT=" + strconv.Itoa(count)}
}

// A child process publishes; this process receives every message intact
// and in order (Reliable), then the roles swap.
func TestMultiProcess(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "parent", d)
	c := middleware.Contract{Topic: "mp/frames", MaxPayload: 4096, Slots: 4, Reliability: middleware.Reliable, Transport: middleware.TransportShm}
	const count = 2000

	t.Run("child publishes", func(t *testing.T) {
		sub, err := n.NewSubscriber(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		cmd, _ := helperCmd(t, "pub", helperEnvFor(d, c, count)...)
		ctx := ctxT(t, 30*time.Second)
		for i := 1; i <= count; i++ {
			var bad string
			err := sub.Next(ctx, func(m *middleware.Message) {
				tag, ok := checkPattern(m.Payload)
				if !ok || tag != uint64(i) || m.Header.Seq != uint64(i) || m.Lost != 0 || int(m.Header.Len) != len(m.Payload) {
					bad = fmt.Sprintf("message %d: tag %d intact %v header %+v lost %d", i, tag, ok, m.Header, m.Lost)
				}
				if d := middleware.MonoNow() - m.Header.SendMono; d < 0 || d > int64(30*time.Second) {
					bad = fmt.Sprintf("message %d: SendMono %d not comparable with this process's CLOCK_MONOTONIC (diff %d)", i, m.Header.SendMono, d)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if bad != "" {
				t.Fatal(bad)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("publisher child: %v", err)
		}
		if st := sub.Stats(); st.Delivered != count || st.Lost != 0 {
			t.Fatalf("stats %+v", st)
		}
	})

	t.Run("child subscribes", func(t *testing.T) {
		pub, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		cmd, out := helperCmd(t, "sub", helperEnvFor(d, c, count)...)
		feedSubChild(t, cmd, out, "subscriber child", pub, c.MaxPayload, count)
	})
}

// sendPatterns sends messages 1..count on p, message i of 8 + i*37 %
// (maxPayload-8) bytes filled with fillPattern(i), the sizes and contents
// the helper subscribers check; the first error names the message.
// feedSubChild feeds the "sub" helper child cmd (named what in a
// failure) whose stdout is out: it waits for its "ready", sends it count
// pattern messages of up to maxPayload bytes on pub, then waits for its
// "done" and its exit, failing t on any step.
func feedSubChild(t *testing.T, cmd *exec.Cmd, out *bufio.Reader, what string, pub *middleware.Publisher, maxPayload, count int) {
	t.Helper()
	expectLine(t, out, "ready")
	if err := sendPatterns(pub, maxPayload, count); err != nil {
		t.Fatal(err)
	}
	expectLine(t, out, "done")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sendPatterns(p *middleware.Publisher, maxPayload, count int) error {
	buf := make([]byte, maxPayload)
	for i := 1; i <= count; i++ {
		sz := 8 + i*37%(maxPayload-8)
		fillPattern(buf[:sz], uint64(i))
		if err := p.Send(buf[:sz]); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
	}
	return nil
}
