//go:build unix

package faultkit

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// Helper roles.
const (
	// RolePub publishes the pattern on a shm topic at a rate until killed;
	// prints "ready" once the publisher exists.
	RolePub = "pub"
	// RoleSub attaches a shm subscriber and prints "ready"; with
	// FAULT_STALL=1 it never reads (a stuck or dying consumer), else it
	// reads and prints nothing.
	RoleSub = "sub"
	// RoleSoakWriter runs a soak runner on a synthetic feed, writing the
	// checkpoint FAULT_CHECKPOINT (resuming it with FAULT_RESUME=1), and
	// prints "window N" after window N is durable (appended and fsynced).
	RoleSoakWriter = "soakwriter"
)

// ShmEndpoint describes a helper's shm endpoint; Env renders it for
// StartHelper and the role reads it back.
type ShmEndpoint struct {
	Domain, ShmDir, Topic string
	Reliable              bool
	Payload               int
	RateHz                float64
	Stall                 bool
}

// Env renders e as helper environment variables.
func (e ShmEndpoint) Env() []string {
	return []string{"FAULT_DOMAIN=" + e.Domain, "FAULT_SHMDIR=" + e.ShmDir, "FAULT_TOPIC=" + e.Topic,
		"FAULT_RELIABLE=" + strconv.FormatBool(e.Reliable), "FAULT_PAYLOAD=" + strconv.Itoa(e.Payload),
		"FAULT_RATE=" + strconv.FormatFloat(e.RateHz, 'g', -1, 64), "FAULT_STALL=" + strconv.FormatBool(e.Stall)}
}

// Contract is the topic contract of e; both ends use it.
func (e ShmEndpoint) Contract() middleware.Contract {
	c := middleware.Contract{Topic: e.Topic, MaxPayload: max(e.Payload, 16), Depth: 16, Transport: middleware.TransportShm}
	if e.Reliable {
		c.Reliability = middleware.Reliable
	}
	return c
}

// NodeOptions are the node options of e.
func (e ShmEndpoint) NodeOptions() *middleware.NodeOptions {
	return &middleware.NodeOptions{Domain: e.Domain, ShmDir: e.ShmDir}
}

func endpointFromEnv() (ShmEndpoint, error) {
	e := ShmEndpoint{Domain: os.Getenv("FAULT_DOMAIN"), ShmDir: os.Getenv("FAULT_SHMDIR"), Topic: os.Getenv("FAULT_TOPIC")}
	var err error
	if e.Reliable, err = strconv.ParseBool(os.Getenv("FAULT_RELIABLE")); err != nil {
		return e, fmt.Errorf("FAULT_RELIABLE: %w", err)
	}
	if e.Payload, err = strconv.Atoi(os.Getenv("FAULT_PAYLOAD")); err != nil {
		return e, fmt.Errorf("FAULT_PAYLOAD: %w", err)
	}
	if e.RateHz, err = strconv.ParseFloat(os.Getenv("FAULT_RATE"), 64); err != nil {
		return e, fmt.Errorf("FAULT_RATE: %w", err)
	}

	if e.Stall, err = strconv.ParseBool(os.Getenv("FAULT_STALL")); err != nil {
		return e, fmt.Errorf("FAULT_STALL: %w", err)
	}
	return e, nil
}

// Fill writes the pattern of message seq into b (len ≥ 8): the sequence
// number, then bytes derived from it, so any mix of two messages (a torn
// read) fails Check. Does not allocate.
func Fill(b []byte, seq uint64) {
	binary.LittleEndian.PutUint64(b, seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(seq*31 + uint64(i))
	}
}

// Check verifies a pattern payload and returns its sequence tag.
func Check(b []byte) (uint64, bool) {
	if len(b) < 8 {
		return 0, false
	}
	seq := binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i++ {
		if b[i] != byte(seq*31+uint64(i)) {
			return seq, false
		}
	}
	return seq, true
}

func runRole(role string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch role {
	case RolePub, RoleSub:
		e, err := endpointFromEnv()
		if err != nil {
			return err
		}
		n, err := middleware.OpenNode(role+"-"+strconv.Itoa(os.Getpid()), e.NodeOptions())
		if err != nil {
			return err
		}
		defer n.Close()
		if role == RolePub {
			return runPub(ctx, n, e, out)
		}
		return runSub(ctx, n, e, out)
	case RoleSoakWriter:
		return runSoakWriter(ctx, out)
	}
	return fmt.Errorf("unknown role %q", role)
}

func runPub(ctx context.Context, n *middleware.Node, e ShmEndpoint, out io.Writer) error {
	p, err := n.NewPublisher(e.Contract(), &middleware.PublisherOptions{SendTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	writeLine(out, "ready")
	buf := make([]byte, e.Payload)
	// The publisher paces by a ticker, which needs a positive period that
	// does not overflow: NaN, Inf, 0 and rates below a millihertz are
	// refused (subscribers get no rate and need none).
	if !(e.RateHz >= 1e-3 && e.RateHz <= 1e7) {
		return fmt.Errorf("FAULT_RATE %v: want 0.001..1e7 Hz", e.RateHz)
	}
	period := time.Duration(float64(time.Second) / e.RateHz)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for seq := uint64(1); ; seq++ {
		Fill(buf, seq)
		if err := p.Send(buf); err != nil {
			return fmt.Errorf("send %d: %w", seq, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func runSub(ctx context.Context, n *middleware.Node, e ShmEndpoint, out io.Writer) error {
	s, err := n.NewSubscriber(e.Contract(), nil)
	if err != nil {
		return err
	}
	writeLine(out, "ready")
	if e.Stall {
		<-ctx.Done() // attached, never consuming: until killed
		return nil
	}
	for {
		if err := s.Next(ctx, func(*middleware.Message) {}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// SoakWriterEnv configures RoleSoakWriter.
func SoakWriterEnv(checkpoint string, window time.Duration, resume bool) []string {
	return []string{"FAULT_CHECKPOINT=" + checkpoint, "FAULT_WINDOW=" + window.String(), "FAULT_RESUME=" + strconv.FormatBool(resume)}
}

func runSoakWriter(ctx context.Context, out io.Writer) error {
	path := os.Getenv("FAULT_CHECKPOINT")
	win, err := time.ParseDuration(os.Getenv("FAULT_WINDOW"))
	if err != nil {
		return fmt.Errorf("FAULT_WINDOW: %w", err)
	}
	var cp *soak.Checkpointer
	if os.Getenv("FAULT_RESUME") == "true" {
		cp, _, err = soak.Resume(path, time.Now())
	} else {
		cp, err = soak.Create(path, soak.Header{Name: "controller-kill", Window: win, Planned: time.Hour})
	}
	if err != nil {
		return err
	}
	defer cp.Close()
	syn := soakrun.NewSynth(1000, 50e3, uint64(os.Getpid()))
	r := &soakrun.Runner{Name: "soakwriter", Window: win, Progress: time.Hour, Until: time.Now().Add(time.Hour), Checkpoint: cp,
		OnWindow: func(w *soak.Window) { writeLine(out, "window %d", w.Index) }}
	writeLine(out, "ready %d", cp.NextIndex())
	return r.Run(ctx, []*soakrun.Track{
		{Agent: "board-sim", Flow: "imu", Role: "subscriber", Src: syn.Sub()},
		{Agent: "board-sim", Flow: "imu", Role: "publisher", Src: syn.Pub()},
	})
}
