package mcapcli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/mcapcli"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// rosFile writes a ROS 2 recording: /cmd_vel (Twist) and /raw (no
// schema), zstd chunks of 1 KiB, n messages each.
func rosFile(t *testing.T, n int) string {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	reg, err := rosmsg.Shipped()
	must(err)
	var b bytes.Buffer
	w, err := mcap.NewWriter(&b, mcap.Options{Header: mcap.Header{Profile: ros2mcap.Profile, Library: "test"}, Compression: mcap.CompressZstd, ChunkSize: 1 << 10})
	must(err)
	s, err := ros2mcap.Schema(reg, 1, "geometry_msgs/Twist")
	must(err)
	must(w.AddSchema(s))
	must(w.AddChannel(ros2mcap.Channel(1, 1, "/cmd_vel", "")))
	must(w.AddChannel(mcap.Channel{ID: 2, Topic: "/raw", MessageEncoding: "x-raw"}))
	must(w.WriteMetadata("run", map[string]string{"case": "a"}))
	c, err := reg.Codec("geometry_msgs/Twist")
	must(err)
	const t0 = 1_765_000_000_000_000_000
	for i := range n {
		p, err := c.Append(nil, rosmsg.Msg{"linear": rosmsg.Msg{"x": float64(i) / 2}})
		must(err)
		must(w.WriteMessage(&mcap.Message{ChannelID: 1, Sequence: uint32(i), LogTime: t0 + uint64(i)*1e6, PublishTime: t0, Data: p}))
		must(w.WriteMessage(&mcap.Message{ChannelID: 2, Sequence: uint32(i), LogTime: t0 + uint64(i)*1e6 + 1, PublishTime: t0, Data: []byte{0xde, 0xad, byte(i)}}))
	}
	must(w.Close())
	name := filepath.Join(t.TempDir(), "run.mcap")
	must(os.WriteFile(name, b.Bytes(), 0o644))
	return name
}

func run(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := mcapcli.Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// info shows the channels, schemas, counts, time range and compression.
func TestInfo(t *testing.T) {
	name := rosFile(t, 100)
	out, _, err := run("info", "--check", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`profile:   "ros2"`, "messages:  200, log time 2025-12-06T05:46:40.000000000Z to", "(99.000001ms)",
		"zstd", "/cmd_vel  100       cdr       1 geometry_msgs/msg/Twist", "/raw      100       x-raw     -",
		"1   geometry_msgs/msg/Twist  ros2msg", "from:      summary", "every CRC checked: ok", "other:     0 attachments, 1 metadata records"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
}

// cat decodes the ROS 2 payloads to JSON and prints the others as hex.
func TestCat(t *testing.T) {
	name := rosFile(t, 10)
	out, _, err := run("cat", "--limit", "3", name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("--limit 3 printed:\n%s", out)
	}
	if want := `1765000000000000000 /cmd_vel [0] {"linear":{"x":0,"y":0,"z":0},"angular":{"x":0,"y":0,"z":0}}`; lines[0] != want {
		t.Errorf("line 1: %s\nwant    %s", lines[0], want)
	}
	if want := "1765000000000000001 /raw [0] dead00"; lines[1] != want {
		t.Errorf("line 2: %s\nwant    %s", lines[1], want)
	}
	out, _, err = run("cat", "--topic", "/cmd_vel", "--hex", name)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 10 || strings.Contains(out, "/raw") || !strings.Contains(out, " 00010000") {
		t.Errorf("--topic /cmd_vel --hex printed %d lines:\n%s", n, out)
	}
}

// A file cut short: info and cat say so and point at recover; recover
// writes a whole file that info reads from its summary.
func TestCutShortThenRecover(t *testing.T) {
	name := rosFile(t, 200)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.mcap")
	if err := os.WriteFile(cut, b[:len(b)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run("info", cut)
	if !errors.Is(err, mcap.ErrTruncated) || !strings.Contains(err.Error(), "recover") || !strings.Contains(out, "scan up to offset") {
		t.Fatalf("info on a cut file: %v\n%s", err, out)
	}
	if _, _, err := run("cat", cut); !errors.Is(err, mcap.ErrTruncated) {
		t.Fatalf("cat on a cut file: %v", err)
	}
	fixed := filepath.Join(t.TempDir(), "fixed.mcap")
	out, _, err = run("recover", cut, fixed)
	if err != nil || !strings.Contains(out, "dropped the rest") {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	out, _, err = run("info", "--check", fixed)
	if err != nil || !strings.Contains(out, "from:      summary") {
		t.Fatalf("info on the recovered file: %v\n%s", err, out)
	}
	if _, _, err := run("recover", cut, fixed); err == nil {
		t.Error("recover overwrote an existing file")
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"frob"}, {"info"}, {"cat", "--nope", "x"}, {"recover", "a"}} {
		if _, _, err := run(args...); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// sample writes the mix recording, which info then describes.
func TestSample(t *testing.T) {
	name := filepath.Join(t.TempDir(), "mix.mcap")
	out, _, err := run("sample", "--duration", "1s", "--compression", "lz4", name)
	if err != nil || !strings.Contains(out, "/lidar/points") {
		t.Fatalf("sample: %v\n%s", err, out)
	}
	out, _, err = run("info", "--check", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lz4", "/imu", "sensor_msgs/msg/Imu", "/camera/image_raw", "/cmd_vel", "geometry_msgs/msg/Twist", "ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)
	if _, _, err := run("sample", "--duration", "-1s", name+"2"); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("negative duration: %v", err)
	}
}

// Decoded arrays are cut for the terminal (--max-array), whole with 0.
func TestCatCutsArrays(t *testing.T) {
	name := filepath.Join(t.TempDir(), "mix.mcap")
	if _, _, err := run("sample", "--duration", "200ms", name); err != nil {
		t.Fatal(err)
	}
	out, _, err := run("cat", "--topic", "/camera/image_raw", "--limit", "1", name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"data":[0,0,0,1,0,0,2,0,1,3,0,1,4,0,2,5,"…+57584 more"]`) || len(out) > 1000 {
		t.Errorf("camera frame printed as (%d bytes):\n%.600s", len(out), out)
	}
	out, _, err = run("cat", "--topic", "/camera/image_raw", "--limit", "1", "--max-array", "0", name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "more") || len(out) < 57600*2 {
		t.Errorf("--max-array 0 printed %d bytes", len(out))
	}
}
