//go:build cyclonedds

package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/peers/cyclonedds"
	"github.com/hilrig/hilrig/ros2/bridge"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

func init() {
	openers["cyclonedds"] = func(t *testing.T) agent.PeerROS2 {
		p, err := cyclonedds.Open(cyclonedds.Config{Domain: uint32(100 + os.Getpid()%100)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return agent.AdaptPeer(p).(agent.PeerROS2)
	}
}

// TestMainCyclone runs the command (`hilrig-peer bridge`) over a
// configuration file: a message published on hilrig reaches a ROS 2
// reader on the DDS side once the bridge wrote its --ready file, and the health lines name the topic with one
// forwarded; ctx ending ends it without error.
func TestMainCyclone(t *testing.T) {
	domain := uint32(100 + os.Getpid()%100)
	peers := map[string]agent.PeerOpener{"cyclonedds": func(string, agentproto.PeerNet) (agent.Peer, error) {
		p, err := cyclonedds.Open(cyclonedds.Config{Domain: domain})
		if err != nil {
			return nil, err
		}
		return agent.AdaptPeer(p), nil
	}}
	dir := t.TempDir()
	topic := rostopic.Topic{Name: fmt.Sprintf("bridge_main/imu_%d", os.Getpid()), Type: "sensor_msgs/Imu"}
	cfg := fmt.Sprintf(`{"domain":"brmain","shm_dir":%q,"topics":[{"ros":{"name":%q,"type":"sensor_msgs/Imu"},
"hilrig":{"topic":"imu","max_payload":1024,"reliable":true,"depth":16,"transport":"shm"}}]}`, dir, topic.Name)
	file := filepath.Join(dir, "bridge.json")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bridge.LoadConfig(file); err != nil {
		t.Fatal(err)
	}
	probe := openers["cyclonedds"](t)
	pr, err := probe.NewROS2Reader(topic.DDSTopic(), topic.DDSType(), true, 10, 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	ready := filepath.Join(dir, "ready")
	done := make(chan error, 1)
	go func() {
		done <- bridge.Main(ctx, []string{"--config", file, "--health", "20ms", "--ready", ready}, &out, io.Discard, peers)
	}()
	node, err := middleware.OpenNode("pub", &middleware.NodeOptions{Domain: "brmain", ShmDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	awaitMatched(t, pr)
	// The bridge's subscriber exists once it wrote its --ready file.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no --ready file in 20 s: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond) // polling the command's file
	}
	pub, err := node.NewPublisher(middleware.Contract{Topic: "imu", MaxPayload: 1024, Reliability: middleware.Reliable, Depth: 16, Transport: middleware.TransportShm}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	msg := make([]byte, 324)
	msg[1] = 1
	for deadline := time.Now().Add(20 * time.Second); ; {
		if err := pub.Send(msg); err != nil {
			t.Fatal(err)
		}
		data, _, err := pr.Take(200 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			if !bytes.Equal(data, msg) {
				t.Errorf("ROS 2 side got %d bytes, not the 324 published", len(data))
			}
			pr.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing crossed the bridge in 20 s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The last line, written after ctx ended, counts what crossed.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "bridge to_ros "+topic.Name+" (sensor_msgs/Imu) <-> hilrig imu: forwarded ") || strings.Contains(last, "forwarded 0,") {
		t.Errorf("last health line %q: want the topic with messages forwarded", last)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
