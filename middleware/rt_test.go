//go:build linux

package middleware_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// CPU pinning and SCHED_FIFO apply to the receive thread, or fail with a
// clear error; a bad priority is refused up front.
func TestSubscriberRTOptions(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "rt", d)
	c := middleware.Contract{Topic: "rt", MaxPayload: 8, Reliability: middleware.Reliable}
	if _, err := n.NewSubscriber(c, &middleware.SubscriberOptions{Priority: 100}); !errors.Is(err, middleware.ErrContract) {
		t.Fatalf("priority 100: %v", err)
	}
	sub, pub := openPairWith(t, n, c, &middleware.SubscriberOptions{CPU: new(int), Priority: 1}, c, nil)
	if err := pub.Send([]byte("x")); err != nil {
		t.Fatal(err)
	}
	err := sub.Receive(ctxT(t, 10*time.Second), func(*middleware.Message) error { return errDone })
	switch {
	case err == errDone:
	case errors.Is(err, middleware.ErrPermission):
		if !strings.Contains(err.Error(), "needs CAP_SYS_NICE or root") {
			t.Fatalf("permission error does not name the capability: %v", err)
		}
		t.Skipf("no CAP_SYS_NICE here: %v", err)
	default:
		t.Fatal(err)
	}
	bad, err := n.NewSubscriber(middleware.Contract{Topic: "rt2", MaxPayload: 8}, &middleware.SubscriberOptions{CPU: new(4095)})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Next(ctxT(t, time.Second), func(*middleware.Message) {}); err == nil || !strings.Contains(err.Error(), "CPU 4095") {
		t.Fatalf("pinning to CPU 4095: %v", err)
	}
}

func TestMlockInChild(t *testing.T) {
	d := testDomain(t)
	_, out := helperCmd(t, "mlock", "HILRIG_DOMAIN="+d)
	line, _ := out.ReadString('\n')
	if line != "ok\n" && !strings.Contains(line, "needs CAP_IPC_LOCK") {
		t.Fatalf("mlock child said %q", line)
	}
}
