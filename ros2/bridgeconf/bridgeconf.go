// Package bridgeconf is the configuration of `hilrig bridge` (issue 33,
// scope 3; ros2/bridge runs it): which topics are forwarded between
// hilrig's bus and a ROS 2 graph, each with its ROS 2 side (name, type,
// QoS profile), its hilrig contract and its direction. Its own package,
// importing neither the agent nor any cgo, so that the controller (rig)
// can write a bridge's file for a process it starts on a board, and the
// bridge can read it, from one set of types.
package bridgeconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// Direction is which way a topic is forwarded.
type Direction uint8

// Directions.
const (
	// ToROS: hilrig's topic → the ROS 2 topic.
	ToROS Direction = iota
	// FromROS: the ROS 2 topic → hilrig's topic.
	FromROS
)

// String is "to_ros" or "from_ros".
func (d Direction) String() string {
	switch d {
	case ToROS:
		return "to_ros"
	case FromROS:
		return "from_ros"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// MarshalText is String; a value outside the enumeration is an error.
func (d Direction) MarshalText() ([]byte, error) {
	if d > FromROS {
		return nil, fmt.Errorf("bridge: %v: no such direction", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads "to_ros" (or "") and "from_ros".
func (d *Direction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "to_ros":
		*d = ToROS
	case "from_ros":
		*d = FromROS
	default:
		return fmt.Errorf("bridge: direction %q: want to_ros or from_ros", b)
	}
	return nil
}

// Transport is hilrig's transport of a bridged topic.
type Transport uint8

// Transports.
const (
	Shm Transport = iota // shared memory (default)
	UDP                  // UDP (Hilrig.UDP: listen address or peers)
)

// String is "shm" or "udp".
func (t Transport) String() string {
	if t == UDP {
		return "udp"
	}
	return "shm"
}

// MarshalText is String.
func (t Transport) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads "shm" (or "") and "udp".
func (t *Transport) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "shm":
		*t = Shm
	case "udp":
		*t = UDP
	default:
		return fmt.Errorf("bridge: transport %q: want shm or udp", b)
	}
	return nil
}

// Hilrig is the hilrig side of a bridged topic.
type Hilrig struct {
	// Topic is hilrig's topic name ([A-Za-z0-9._/-], 1..64 bytes).
	Topic     string    `json:"topic"`
	Transport Transport `json:"transport,omitempty"`
	// MaxPayload bounds a message (the ROS 2 encoding, header included).
	MaxPayload int `json:"max_payload"`
	// Reliable makes the topic reliable (default best effort); Depth is
	// its history depth (0: the middleware's default).
	Reliable bool `json:"reliable,omitempty"`
	Depth    int  `json:"depth,omitempty"`
	// UDP configures the UDP transport: a to_ros topic's bridge listens
	// on UDP.Listen, a from_ros topic's bridge sends to UDP.Peers.
	UDP middleware.UDPConfig `json:"udp,omitempty"`
}

// Contract is hilrig's contract of the topic.
func (h Hilrig) Contract() middleware.Contract {
	c := middleware.Contract{Topic: h.Topic, MaxPayload: h.MaxPayload, Depth: h.Depth, Transport: middleware.TransportShm, UDP: h.UDP}
	if h.Transport == UDP {
		c.Transport = middleware.TransportUDP
	}
	if h.Reliable {
		c.Reliability = middleware.Reliable
	}
	return c
}

// Topic is one forwarded topic.
type Topic struct {
	// ROS is the ROS 2 side: name, type, QoS profile.
	ROS rostopic.Topic `json:"ros"`
	// Hilrig is hilrig's side.
	Hilrig Hilrig `json:"hilrig"`
	// Direction: to_ros (default) or from_ros.
	Direction Direction `json:"direction"`
}

// Config is a bridge's configuration file (JSON).
type Config struct {
	// Domain is hilrig's middleware domain (segment namespace); default "0".
	Domain string `json:"domain,omitempty"`
	// ShmDir is where hilrig's segments live; default /dev/shm.
	ShmDir string  `json:"shm_dir,omitempty"`
	Topics []Topic `json:"topics"`
}

// Load reads a JSON configuration file. Errors name the file and
// the topic.
func Load(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("bridge: %s: %w", file, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("bridge: %s: %w", file, err)
	}
	return &c, nil
}

// Validate checks every topic: the ROS 2 side's form, a hilrig topic and
// a max payload.
func (c *Config) Validate() error {
	if len(c.Topics) == 0 {
		return errors.New("no topics")
	}
	for i, t := range c.Topics {
		if err := t.ROS.Validate(); err != nil {
			return fmt.Errorf("topics[%d]: %w", i, err)
		}
		if t.Hilrig.Topic == "" || t.Hilrig.MaxPayload < 4 {
			return fmt.Errorf("topics[%d] (%s): hilrig.topic and hilrig.max_payload (≥ 4) are required", i, t.ROS.Name)
		}
		if t.Direction > FromROS {
			return fmt.Errorf("topics[%d] (%s): %v", i, t.ROS.Name, t.Direction)
		}
	}
	return nil
}

// WriteFile validates c and writes it to file as Load reads it (mode
// 0644: the bridge may run as another user on the board).
func (c *Config) WriteFile(file string) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("bridgeconf: %s: %w", file, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("bridgeconf: %s: %w", file, err)
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// HealthRecord is one topic's health as `hilrig bridge --health-format
// json` writes it: one JSON object a line per topic every health period,
// so a controller reads the figures as values, not from the text line.
type HealthRecord struct {
	Direction Direction `json:"direction"`
	// ROS and Type are the ROS 2 topic's name and type; Hilrig hilrig's
	// topic.
	ROS    string `json:"ros"`
	Type   string `json:"type"`
	Hilrig string `json:"hilrig"`
	// Forwarded and Dropped count messages so far.
	Forwarded uint64 `json:"forwarded"`
	Dropped   uint64 `json:"dropped"`
	// The latency the bridge added so far (ns, CLOCK_MONOTONIC): from the
	// source's receive stamp (hilrig's subscriber, the DDS take) to the
	// forward call's return. 0 before the first message.
	AddedP50Ns int64  `json:"added_p50_ns"`
	AddedP99Ns int64  `json:"added_p99_ns"`
	AddedMaxNs int64  `json:"added_max_ns"`
	LastError  string `json:"last_error,omitempty"`
}
