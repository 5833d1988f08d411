package rig_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/rig"
)

// TestKillAndRestartPublisherBoard: SIGKILLing the publisher's agent
// fails its endpoint with ErrAgent (the process is gone), RestartAgent
// brings a fresh agent up on the board, and RestartEndpoint starts the
// publisher again there: the subscriber, which kept running on its own
// board, delivers the new publisher's messages.
func TestKillAndRestartPublisherBoard(t *testing.T) {
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, RateHz: 1000, Duration: time.Minute, Window: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	sub, pub := f.Subscribers[0], f.Publisher
	delivered := func() uint64 {
		var n uint64
		for _, w := range sub.TakeWindows() {
			n += w.Received
		}
		return n
	}
	waitDelivery := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for delivered() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the subscriber delivered nothing within 10s", what)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	}
	waitDelivery("before the kill")
	old, err := r.Agent(ctx, "board-a")
	if err != nil {
		t.Fatal(err)
	}
	oldPID := old.PID()
	na, err := r.RestartAgent(ctx, "board-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Wait(ctx); !errors.Is(err, rig.ErrAgent) {
		t.Errorf("killed publisher's Wait = %v, want ErrAgent", err)
	}
	if old.Dead() == nil {
		t.Error("killed agent does not report its end")
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("killed agent pid %d still exists (kill 0: %v)", oldPID, err)
	}
	if na == old || na.PID() == oldPID {
		t.Fatalf("RestartAgent returned the old agent (pid %d)", na.PID())
	}
	if got, _ := r.Agent(ctx, "board-a"); got != na {
		t.Error("Rig.Agent does not return the restarted agent")
	}
	delivered() // forget windows from before the kill
	np, err := r.RestartEndpoint(ctx, pub, pub.Spec.Endpoint+"-r1")
	if err != nil {
		t.Fatal(err)
	}
	if np.Board() != "board-a" || np.Spec.Role != agentproto.Publisher {
		t.Errorf("restarted endpoint on %s as %s", np.Board(), np.Spec.Role)
	}
	waitDelivery("after the restart")
	_ = np.Stop()
	_ = sub.Stop()
	if _, err := np.Wait(ctx); err != nil {
		t.Errorf("restarted publisher: %v", err)
	}
	if fin, err := sub.Wait(ctx); err != nil || fin.Reason != agentproto.EndStopped || fin.Received == 0 {
		t.Errorf("subscriber final %+v, %v: want it to have run through the kill and stopped cleanly", fin, err)
	}
}
