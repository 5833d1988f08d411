package middleware_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware"
)

// Containers: endpoints in other PID and mount namespaces that share the
// segment's tmpfs (a ROS 2 node in a container with --ipc=host, or with
// /dev/shm bind-mounted). Liveness must not depend on PIDs: the child is
// PID 1 of its own namespace, which on the host is init.

// nsEnv makes a helper enter its container before it opens its node.
const nsEnv = "HILRIG_NS"

// nsHelperCmd starts a helper in new PID and mount namespaces (as
// `unshare --pid --fork --mount-proc` would), reaching the segments
// through segDir, a bind mount of /dev/shm made inside the child's own
// mount namespace. Needs root.
func nsHelperCmd(t *testing.T, role, segDir string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return startHelper(t, &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL},
		append([]string{helperEnv + "=" + role, nsEnv + "=1", "HILRIG_SEGDIR=" + segDir}, env...))
}

// enterContainer runs first in a helper started by nsHelperCmd: it checks
// it is PID 1, makes its mounts private (so nothing leaks to the host),
// mounts its own /proc and bind-mounts /dev/shm at HILRIG_SEGDIR.
func enterContainer(string) error {
	if pid := os.Getpid(); pid != 1 {
		return fmt.Errorf("container helper is pid %d, want 1 (not in a new PID namespace)", pid)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if d := os.Getenv("HILRIG_SEGDIR"); d != "" {
		if err := unix.Mount("/dev/shm", d, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/shm on %s: %w", d, err)
		}
	}
	return nil
}

func needRoot(t *testing.T) {
	t.Helper()
	testkit.NeedRoot(t, "needs root (CLONE_NEWPID|CLONE_NEWNS and mounts in the child)")
}

// A Reliable topic between the host and a container, both ways and
// between two containers: 3000 messages through 4 slots with a
// subscriber that stalls 20 ms every 300 messages (so the publisher
// waits and checks liveness, every 5 ms, many times). Every message
// arrives intact, in order, nothing lost, nobody dropped.
func TestReliableAcrossPIDNamespaces(t *testing.T) {
	needRoot(t)
	c := middleware.Contract{Topic: "ns/rel", MaxPayload: 1024, Slots: 4, Reliability: middleware.Reliable, Transport: middleware.TransportShm}
	const count = 3000
	stall := "HILRIG_STALL_EVERY=300"

	t.Run("host publishes, container subscribes", func(t *testing.T) {
		d := testDomain(t)
		n := openNode(t, "host-pub", d)
		pub, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cmd, out := nsHelperCmd(t, "sub", t.TempDir(), append(helperEnvFor(d, c, count), stall)...)
		feedSubChild(t, cmd, out, "container subscriber", pub, c.MaxPayload, count)
		if st := pub.Stats(); st.DroppedSubs != 0 || st.Timeouts != 0 || st.Blocked == 0 {
			t.Fatalf("publisher stats %+v: want the live container subscriber never dropped, no timeouts, some blocking", st)
		}
	})

	t.Run("container publishes, host subscribes", func(t *testing.T) {
		d := testDomain(t)
		n := openNode(t, "host-sub", d)
		sub, err := n.NewSubscriber(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		cmd, _ := nsHelperCmd(t, "pub", t.TempDir(), helperEnvFor(d, c, count)...)
		ctx := ctxT(t, 30*time.Second)
		for i := 1; i <= count; i++ {
			var bad string
			err := sub.Next(ctx, func(m *middleware.Message) {
				if tag, ok := checkPattern(m.Payload); !ok || tag != uint64(i) || m.Header.Seq != uint64(i) || m.Lost != 0 {
					bad = fmt.Sprintf("message %d: tag %d intact %v seq %d lost %d", i, tag, ok, m.Header.Seq, m.Lost)
				}
				if i%300 == 0 {
					time.Sleep(20 * time.Millisecond) // slow consumer, see above
				}
			})
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if bad != "" {
				t.Fatal(bad)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("container publisher: %v", err)
		}
		if st := sub.Stats(); st.Delivered != count || st.Lost != 0 || st.Epochs != 1 {
			t.Fatalf("subscriber stats %+v", st)
		}
	})

	t.Run("two containers", func(t *testing.T) {
		d := testDomain(t)
		sub, out := nsHelperCmd(t, "sub", t.TempDir(), append(helperEnvFor(d, c, count), stall)...)
		expectLine(t, out, "ready")
		pub, _ := nsHelperCmd(t, "pub", t.TempDir(), helperEnvFor(d, c, count)...)
		expectLine(t, out, "done")
		if err := sub.Wait(); err != nil {
			t.Fatalf("container subscriber: %v", err)
		}
		if err := pub.Wait(); err != nil {
			t.Fatalf("container publisher: %v", err)
		}
	})
}

// One publisher per ring, whatever namespaces the candidates live in; a
// dead container publisher is detected and its ring taken over.
func TestSecondPublisherAcrossPIDNamespaces(t *testing.T) {
	needRoot(t)
	c := middleware.Contract{Topic: "ns/busy", MaxPayload: 64, Slots: 4, Transport: middleware.TransportShm}
	d := testDomain(t)
	n := openNode(t, "host", d)

	holder, out := nsHelperCmd(t, "pubhold", t.TempDir(), helperEnvFor(d, c, 0)...)
	expectLine(t, out, "ready")
	if _, err := n.NewPublisher(c, nil); !errors.Is(err, middleware.ErrBusy) {
		t.Fatalf("host publisher while a container publisher lives: %v, want ErrBusy", err)
	}
	holder.Process.Kill()
	holder.Wait()
	pub, err := n.NewPublisher(c, nil)
	if err != nil {
		t.Fatalf("host publisher after the container publisher died: %v", err)
	}

	_, out = nsHelperCmd(t, "pubtry", t.TempDir(), helperEnvFor(d, c, 0)...)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "err:") || !strings.Contains(line, middleware.ErrBusy.Error()) {
		t.Fatalf("container publisher while the host publisher lives: %q %v, want ErrBusy", line, err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Reliable publisher waits for a live, idle subscriber in a container
// until SendTimeout (it is not taken for dead), and drops it once it is
// SIGKILLed.
func TestDeadSubscriberInPIDNamespaceDropped(t *testing.T) {
	needRoot(t)
	d := testDomain(t)
	n := openNode(t, "pub", d)
	c := middleware.Contract{Topic: "ns/dead", MaxPayload: 32, Slots: 2, Reliability: middleware.Reliable, Transport: middleware.TransportShm}
	pub, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cmd, out := nsHelperCmd(t, "subidle", t.TempDir(), helperEnvFor(d, c, 0)...)
	expectLine(t, out, "ready")
	msg := make([]byte, 16)
	for i := 0; i < c.Slots; i++ {
		if err := pub.Send(msg); err != nil {
			t.Fatalf("send %d into free ring: %v", i, err)
		}
	}
	if err := pub.Send(msg); !errors.Is(err, middleware.ErrTimeout) {
		t.Fatalf("send into a full ring with a live idle container subscriber: %v, want ErrTimeout", err)
	}
	if st := pub.Stats(); st.DroppedSubs != 0 {
		t.Fatalf("live container subscriber dropped: %+v", st)
	}
	segs, err := middleware.ListSegments("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.Domain == d && (!s.PublisherAlive || len(s.Subscribers) != 1 || !s.Subscribers[0].Alive || s.Subscribers[0].PID != 1) {
			t.Fatalf("shm ls: publisher alive %v, subscribers %+v; want one live subscriber, pid 1 (in its namespace)", s.PublisherAlive, s.Subscribers)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := pub.Send(msg); err != nil {
		t.Fatalf("send after the container subscriber died: %v", err)
	}
	if st := pub.Stats(); st.DroppedSubs != 1 {
		t.Fatalf("DroppedSubs = %d, want 1", st.DroppedSubs)
	}
}
