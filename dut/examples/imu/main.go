// Command imu is the example device under test (a) of the sim rack: a
// controller on hilrig's middleware. It takes IMU samples on its input
// topic, runs a small control law (a PD rate damper on the three angular
// rates), publishes the command on its output topic with the sample's
// sequence number copied through (bytes 0..8, so the rig correlates by
// echo) and then toggles its "done" GPIO line, as firmware raising a pin
// after it acted would.
//
// -stall-every N makes it stall -stall (default 5 ms) before publishing
// every Nth sample: the fault the reaction suite must catch. Each stall is
// printed on standard output (the rig captures it like a console) and,
// when HILRIG_TRACE_MARKER names a trace_marker file, written there so a
// kernel trace snapshot of the breach names it.
//
// The rig passes its ports in the environment (docs/dut.md):
// HILRIG_DOMAIN, HILRIG_IMU_TOPIC/_PAYLOAD/_DEPTH, HILRIG_CMD_TOPIC/_PAYLOAD/_DEPTH and
// HILRIG_DONE_CHIP/_LINE (optional).
//
// Payload layout (little-endian): the input is seq uint64 at 0, then the
// rates ωx, ωy, ωz as float64 at 8, 16, 24 (absent rates read 0); the
// output is seq at 0, then the commanded torques τx, τy, τz at 8, 16, 24.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/middleware"
)

func main() {
	stallEvery := flag.Int("stall-every", 0, "stall before publishing every Nth sample (0: never)")
	stall := flag.Duration("stall", 5*time.Millisecond, "how long a stall lasts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *stallEvery, *stall); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "dut imu:", err)
		os.Exit(1)
	}
}

// envPort reads a port's message size (PREFIX_PAYLOAD, bytes, default 64,
// at least 32) and queue depth (PREFIX_DEPTH, default 16, at least 1).
func envPort(prefix string) (size, depth int, err error) {
	if size, err = envInt(prefix+"_PAYLOAD", 64, 32); err != nil {
		return 0, 0, err
	}
	if depth, err = envInt(prefix+"_DEPTH", 16, 1); err != nil {
		return 0, 0, err
	}
	return size, depth, nil
}

func envInt(k string, def, least int) (int, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		return 0, fmt.Errorf("%s=%q: want an integer >= %d", k, v, least)
	}
	return n, nil
}

func run(ctx context.Context, stallEvery int, stall time.Duration) error {
	inTopic, outTopic := os.Getenv("HILRIG_IMU_TOPIC"), os.Getenv("HILRIG_CMD_TOPIC")
	if inTopic == "" || outTopic == "" {
		return fmt.Errorf("HILRIG_IMU_TOPIC and HILRIG_CMD_TOPIC must name the topics")
	}
	inSize, inDepth, err := envPort("HILRIG_IMU")
	if err != nil {
		return err
	}
	outSize, outDepth, err := envPort("HILRIG_CMD")
	if err != nil {
		return err
	}
	node, err := middleware.OpenNode("dut-imu", &middleware.NodeOptions{Domain: os.Getenv("HILRIG_DOMAIN")})
	if err != nil {
		return err
	}
	defer node.Close()
	sub, err := node.NewSubscriber(middleware.Contract{Topic: inTopic, MaxPayload: inSize, Depth: inDepth}, nil)
	if err != nil {
		return err
	}
	pub, err := node.NewPublisher(middleware.Contract{Topic: outTopic, MaxPayload: outSize, Depth: outDepth}, nil)
	if err != nil {
		return err
	}
	var done gpio.Marker
	if chip := os.Getenv("HILRIG_DONE_CHIP"); chip != "" {
		o, err := gpio.Open(ctx, gpio.LineSpec{Chip: gpio.Chip(chip), Line: os.Getenv("HILRIG_DONE_LINE"), Consumer: "dut-imu"}, gpio.Mode{})
		if err != nil {
			return err
		}
		defer o.Close()
		done = o
	}
	var marker *os.File
	if p := os.Getenv("HILRIG_TRACE_MARKER"); p != "" {
		// Marking is a diagnosis, not the job: without it the program
		// still runs, and says why.
		if marker, err = os.OpenFile(p, os.O_WRONLY, 0); err != nil {
			fmt.Fprintln(os.Stderr, "dut imu: no trace marker:", err)
			marker = nil
		} else {
			defer marker.Close()
		}
	}
	fmt.Printf("dut imu: %s → %s, stall %s every %d\n", inTopic, outTopic, stall, stallEvery)
	out := make([]byte, outSize)
	var prev [3]float64
	var n int
	const kp, kd = 0.8, 0.05
	return sub.Receive(ctx, func(m *middleware.Message) error {
		n++
		p := m.Payload
		if len(p) >= 8 {
			copy(out[:8], p[:8])
		}
		for i := range 3 {
			var w float64
			if off := 8 + 8*i; len(p) >= off+8 {
				w = math.Float64frombits(binary.LittleEndian.Uint64(p[off:]))
			}
			tau := -kp*w - kd*(w-prev[i])
			prev[i] = w
			binary.LittleEndian.PutUint64(out[8+8*i:], math.Float64bits(tau))
		}
		if stallEvery > 0 && n%stallEvery == 0 {
			seq := binary.LittleEndian.Uint64(out[:8])
			line := fmt.Sprintf("hlr dut-imu stall %s seq=%d", stall, seq)
			if marker != nil {
				_, _ = marker.WriteString(line)
			}
			fmt.Println(line)
			time.Sleep(stall)
		}
		if err := pub.Send(out); err != nil {
			return err
		}
		if done != nil {
			return done.Mark()
		}
		return nil
	})
}
