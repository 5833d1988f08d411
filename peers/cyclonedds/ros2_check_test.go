//go:build cyclonedds

package cyclonedds

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// buildCheck builds testdata/ros2check with Debian's idlc (-t: no type
// information) from the committed IDL of the shipped types, and cc.
func buildCheck(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"idlc", "cc", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian cyclonedds-tools, gcc, pkg-config): %v", tool, err)
		}
	}
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("idlc", "-t", "-x", "final", "-o", dir, "../../ros2/rosmsg/idl/shipped.idl")
	flags := strings.Fields(run("pkg-config", "--cflags", "--libs", "CycloneDDS"))
	bin := filepath.Join(dir, "ros2check")
	run("cc", append([]string{"-O1", "-Wall", "-o", bin, "testdata/ros2check/check.c", filepath.Join(dir, "shipped.c"), "-I" + dir}, flags...)...)
	return bin
}

// checkProc is a running ros2check.
type checkProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startCheck(t *testing.T, bin string, cfg Config, args ...string) *checkProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{fmt.Sprint(cfg.Domain)}, args...)...)
	// The participant's own configuration: loopback only, no multicast,
	// unicast discovery (the rig's rule for every DDS).
	cmd.Env = append(os.Environ(), "CYCLONEDDS_URI="+strings.ReplaceAll(cfg.xml(), "\n", ""))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &checkProc{cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("ros2check stderr: %s", stderr.String())
		}
	})
	return p
}

func (p *checkProc) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("ros2check ended without the line")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("ros2check printed nothing in 30 s")
	}
	return ""
}

func awaitMatch(t *testing.T, m interface{ Matched() (int, error) }) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := m.Matched()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no match in 20 s")
		}
		time.Sleep(time.Millisecond) // polling DDS's status: nothing to wait on
	}
}

// sameMsg compares the payload b (hilrig's bytes) with the JSON ros2check
// printed, field by field: both through the codec into values, both back
// to JSON (one canonical text per value).
func sameMsg(t *testing.T, c *rosmsg.Codec, b []byte, printed string) {
	t.Helper()
	m, err := c.Decode(b)
	if err != nil {
		t.Fatalf("hilrig's bytes: %v", err)
	}
	p, err := c.FromJSON([]byte(printed))
	if err != nil {
		t.Fatalf("ros2check's JSON %s: %v", printed, err)
	}
	want, err := c.ToJSON(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ToJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("fields differ:\nhilrig    %s\nros2check %s", got, want)
	}
}

// TestROS2IndependentCyclone (issue 33, scope 4a): a C program built with
// Debian's `idlc -t` from the repo's IDL of the shipped types — Cyclone's
// generated types and serializer, nothing of hilrig's codec — reads
// through Cyclone what hilrig's ROS 2 writer writes and writes what
// hilrig's ROS 2 reader reads, sensor_msgs/Imu (fixed arrays, nested
// types, a string) and sensor_msgs/Image (strings, a uint8 sequence),
// every field compared.
func TestROS2IndependentCyclone(t *testing.T) {
	bin := buildCheck(t)
	cfg := Config{Domain: uint32(150 + os.Getpid()%50)}
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg = p.cfg
	reg, err := rosmsg.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	imgData := make([]uint8, 1000)
	for i := range imgData {
		imgData[i] = uint8(i*13 + 1)
	}
	for _, tc := range []struct {
		kind, typ string
		msg       rosmsg.Msg
	}{
		{"imu", "sensor_msgs/Imu", rosmsg.Msg{
			"header":                         rosmsg.Msg{"frame_id": "imu_link"},
			"orientation":                    rosmsg.Msg{"x": 0.5, "y": -0.5, "z": 0.5, "w": -0.5},
			"orientation_covariance":         []float64{1, 2, 3, 4, 5, 6, 7, 8, 9},
			"angular_velocity":               rosmsg.Msg{"x": 1e-9, "y": -3.25, "z": 7.0},
			"angular_velocity_covariance":    []float64{-1, 0, 0, 0, -1, 0, 0, 0, -1},
			"linear_acceleration":            rosmsg.Msg{"x": 9.80665, "y": 0.0, "z": -1e-300},
			"linear_acceleration_covariance": []float64{0.5, 0.25, 0.125, 0, 0, 0, 0, 0, 2},
		}},
		{"image", "sensor_msgs/Image", rosmsg.Msg{
			"header": rosmsg.Msg{"frame_id": "cam"}, "height": uint32(10), "width": uint32(100),
			"encoding": "mono8", "is_bigendian": uint8(0), "step": uint32(100), "data": imgData,
		}},
	} {
		c, err := reg.Codec(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		topic := rostopic.Topic{Name: fmt.Sprintf("hilrig_check/%s_%d", tc.kind, os.Getpid()), Type: tc.typ}
		t.Run("hilrig-to-c/"+tc.kind, func(t *testing.T) {
			w, err := p.NewROS2Writer(topic.DDSTopic()+"_w", topic.DDSType(), true, 10, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cp := startCheck(t, bin, cfg, "read", tc.kind, topic.DDSTopic()+"_w")
			if l := cp.line(t); l != "matched" {
				t.Fatalf("ros2check: %q, want matched", l)
			}
			awaitMatch(t, w)
			b, err := c.Append(nil, tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(b, 1, 0); err != nil { // CLOCK_REALTIME stamp
				t.Fatal(err)
			}
			sameMsg(t, c, b, cp.line(t))
		})
		t.Run("c-to-hilrig/"+tc.kind, func(t *testing.T) {
			r, err := p.NewROS2Reader(topic.DDSTopic()+"_r", topic.DDSType(), true, 10, 4096, false)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cp := startCheck(t, bin, cfg, "write", tc.kind, topic.DDSTopic()+"_r")
			if l := cp.line(t); l != "matched" {
				t.Fatalf("ros2check: %q, want matched", l)
			}
			awaitMatch(t, r)
			if _, err := io.WriteString(cp.in, "go\n"); err != nil {
				t.Fatal(err)
			}
			var got []byte
			for deadline := time.Now().Add(20 * time.Second); got == nil && time.Now().Before(deadline); {
				data, _, err := r.Take(100 * time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if data != nil {
					got = append([]byte(nil), data...)
					r.Release()
				}
			}
			if got == nil {
				t.Fatal("hilrig's reader got nothing in 20 s")
			}
			sameMsg(t, c, got, cp.line(t))
		})
	}
}
