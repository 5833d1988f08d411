package dut

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// ROS 2 ports (docs/dut.md, "A ROS 2 node in the loop"). The controller
// is CGO-free, so a dut's ROS 2 topics are reached through the peer
// binary's bridge (`hilrig-peer bridge`, ros2/bridge), which Start runs
// on the program's board beside it: a to_ros topic per ROS 2 input and a
// from_ros topic per ROS 2 output, each paired with a hilrig topic
// (ros2HilrigTopic) that Measure sends on and takes from in the
// controller. The bridge forwards the message's XCDR1 bytes as they are,
// so the header stamp Measure writes just before the send is the stamp
// the program reads, and the stamp it copies into its answer's header is
// the one Measure reads back: echo by stamp, on the controller's
// CLOCK_MONOTONIC.

// isROS2 reports whether p is a ROS 2 topic.
func isROS2(p fixtures.DUTPort) bool {
	return !p.IsGPIO() && p.Middleware.OrDefault() == fixtures.PortROS2
}

// hasROS2 reports whether any of d's ports is a ROS 2 topic.
func hasROS2(d *fixtures.DUT) bool {
	for _, p := range append(append([]fixtures.DUTPort{}, d.Inputs...), d.Outputs...) {
		if isROS2(p) {
			return true
		}
	}
	return false
}

// ros2HilrigTopic is the hilrig topic the bridge pairs with ROS 2 port p
// of d: "dut/<dut>/<port>" (fits the contract's 64 bytes: names are ≤ 32).
func ros2HilrigTopic(d *fixtures.DUT, p fixtures.DUTPort) string {
	return "dut/" + d.Name + "/" + p.Name
}

// ros2Profile is the QoS profile of a ROS 2 port: ROS 2's sensor_data for
// an input (best effort, as a sensor driver publishes), default
// (reliable) for an output, as the example program's endpoints are.
func ros2Profile(out bool) rostopic.Profile {
	if out {
		return rostopic.ProfileDefault
	}
	return rostopic.ProfileSensorData
}

// DDSDomain is the DDS domain id (0..232) of a dut's ROS 2 topics in a
// run: derived from the run's middleware domain and the dut's name, so
// two runs (or two duts) on one machine do not meet. The program gets it
// as HILRIG_DDS_DOMAIN.
func DDSDomain(d *fixtures.DUT, pl Placement) uint32 {
	h := fnv.New32a()
	h.Write([]byte(pl.Domain + "\x00" + d.Name))
	return 1 + h.Sum32()%200
}

// bridgeTopic and bridgeConfig are ros2/bridge's configuration file
// (JSON; bridge.LoadConfig reads it, TestBridgeConfigLoads checks it):
// written here because dut does not import the agent that package
// imports.
type bridgeTopic struct {
	ROS       rostopic.Topic `json:"ros"`
	Hilrig    bridgeHilrig   `json:"hilrig"`
	Direction string         `json:"direction"`
}

type bridgeHilrig struct {
	Topic      string `json:"topic"`
	MaxPayload int    `json:"max_payload"`
	Depth      int    `json:"depth,omitempty"`
}

type bridgeConfig struct {
	Domain string        `json:"domain,omitempty"`
	Topics []bridgeTopic `json:"topics"`
}

// BridgeConfig is the JSON configuration of the bridge Start runs for d's
// ROS 2 ports in pl's hilrig domain; nil when d has none.
func BridgeConfig(d *fixtures.DUT, pl Placement) ([]byte, error) {
	cfg := bridgeConfig{Domain: pl.Domain}
	add := func(ps []fixtures.DUTPort, out bool) {
		dir := "to_ros"
		if out {
			dir = "from_ros"
		}
		for _, p := range ps {
			if !isROS2(p) {
				continue
			}
			cfg.Topics = append(cfg.Topics, bridgeTopic{
				ROS:       rostopic.Topic{Name: p.Topic, Type: ros2Type(p), Profile: ros2Profile(out)},
				Hilrig:    bridgeHilrig{Topic: ros2HilrigTopic(d, p), MaxPayload: p.PayloadOrDefault(), Depth: TopicDepth},
				Direction: dir,
			})
		}
	}
	add(d.Inputs, false)
	add(d.Outputs, true)
	if len(cfg.Topics) == 0 {
		return nil, nil
	}
	return json.Marshal(cfg)
}

// ros2Type is p's message type as "pkg/Name" ("sensor_msgs/msg/Imu" is
// accepted for it, as rosmsg's registry does).
func ros2Type(p fixtures.DUTPort) string {
	if pkg, name, ok := strings.Cut(p.Type, "/msg/"); ok {
		return pkg + "/" + name
	}
	return p.Type
}

// ros2Template is the stimulus message of ROS 2 input p, encoded once:
// rostopic.Template of its type (every field at its default, frame_id
// "hilrig"), at its smallest size. The type must start with a
// std_msgs/Header: the stamp rides there.
func ros2Template(p fixtures.DUTPort) ([]byte, error) {
	reg, err := rosmsg.Shipped()
	if err != nil {
		return nil, err
	}
	c, err := reg.Codec(ros2Type(p))
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	n, err := rostopic.MinSize(c)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	if n > p.PayloadOrDefault() {
		return nil, fmt.Errorf("port %s: a %s is %d bytes, above the port's payload %d", p.Name, p.Type, n, p.PayloadOrDefault())
	}
	b, err := rostopic.Template(c, n)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	return b, nil
}

// stampsToSeq turns responses whose Seq holds the echoed header stamp
// (ns) into responses numbered by their stimulus (1-based) for
// Correlate: a stamp equal to stimulus k's send stamp is k+1; a stamp
// before the first timed stimulus is a readiness probe's late answer and
// is dropped; any other stamp names no stimulus (Seq 0: unknown). stimuli
// are in increasing order. Filters rs in place and returns it.
func stampsToSeq(stimuli []int64, rs []Response) []Response {
	out := rs[:0]
	for _, r := range rs {
		s := int64(r.Seq)
		if len(stimuli) > 0 && s < stimuli[0] {
			continue
		}
		i := sort.Search(len(stimuli), func(k int) bool { return stimuli[k] >= s })
		r.Seq = 0
		if i < len(stimuli) && stimuli[i] == s {
			r.Seq = uint64(i + 1)
		}
		out = append(out, r)
	}
	return out
}

// needTools checks the tools the C example's build needs; missing ones
// wrap ErrToolMissing.
func needTools(ctx context.Context) error {
	for _, t := range []string{"idlc", "cc", "pkg-config"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%w: %s (Debian cyclonedds-tools, gcc, pkg-config): %w", ErrToolMissing, t, err)
		}
	}
	if err := exec.CommandContext(ctx, "pkg-config", "--exists", "CycloneDDS").Run(); err != nil {
		return fmt.Errorf("%w: Cyclone DDS's development files (Debian cyclonedds-dev): pkg-config CycloneDDS: %w", ErrToolMissing, err)
	}
	return nil
}

// isCDir reports whether the module's directory dir is a C program (C
// sources, no Go): the rig builds it with BuildC rather than go build.
func isCDir(dir string) bool {
	cs, _ := filepath.Glob(filepath.Join(dir, "*.c"))
	gos, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(cs) > 0 && len(gos) == 0
}

// BuildC builds the C program in directory pkg of the module at
// moduleDir (its *.c files) against Cyclone DDS: the C types of the
// shipped ROS 2 messages generated by Debian's `idlc -t -x final` from
// ros2/rosmsg/idl/shipped.idl, compiled and linked by `cc` with
// pkg-config's CycloneDDS flags, into outDir/<the directory's name>.
// Missing tools wrap ErrToolMissing. Blocks for the build.
func BuildC(ctx context.Context, moduleDir, pkg, outDir string) (string, error) {
	if err := needTools(ctx); err != nil {
		return "", err
	}
	src := filepath.Join(moduleDir, pkg)
	gen, err := os.MkdirTemp(outDir, "idlc-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gen)
	run := func(name string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("build %s: %s %s: %w\n%s", pkg, name, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := run("idlc", "-t", "-x", "final", "-o", gen, filepath.Join(moduleDir, "ros2", "rosmsg", "idl", "shipped.idl")); err != nil {
		return "", err
	}
	flags, err := run("pkg-config", "--cflags", "--libs", "CycloneDDS")
	if err != nil {
		return "", err
	}
	cs, err := filepath.Glob(filepath.Join(src, "*.c"))
	if err != nil || len(cs) == 0 {
		return "", fmt.Errorf("build %s: no C sources: %v", pkg, err)
	}
	bin := filepath.Join(outDir, filepath.Base(src))
	args := append([]string{"-O2", "-Wall", "-o", bin, "-I", gen, filepath.Join(gen, "shipped.c")}, cs...)
	if _, err := run("cc", append(args, strings.Fields(flags)...)...); err != nil {
		return "", err
	}
	return bin, nil
}

// peerBin is the peer binary that runs the bridge: $HILRIG_PEER_BIN, else
// built from the module's source with the cyclonedds tag (deploy's build
// cache), as `hilrig bridge` does.
func peerBin(ctx context.Context, bo deploy.BuildOptions) (string, error) {
	if b := os.Getenv("HILRIG_PEER_BIN"); b != "" {
		return b, nil
	}
	if err := needTools(ctx); err != nil {
		return "", err
	}
	bo.Package, bo.GOOS, bo.GOARCH, bo.Peers = "", "", "", []string{"cyclonedds"}
	bin, err := deploy.Build(ctx, bo)
	if err != nil {
		if errors.Is(err, deploy.ErrBuild) {
			return "", fmt.Errorf("the peer binary (cgo, tag cyclonedds) for the bridge: %w", err)
		}
		return "", err
	}
	return bin, nil
}
