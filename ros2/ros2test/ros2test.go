// Package ros2test is the test kit of the independent ROS 2 checks
// (issue 33, scope 4a): it runs a ros2check program (a DDS vendor's own
// generated types and serializer: peers/cyclonedds/testdata/ros2check,
// peers/fastdds/testdata/ros2check), reads the lines it prints, and
// compares the JSON it prints with hilrig's bytes field by field. The
// messages both sides send are here too. Tests only.
package ros2test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// Proc is a running ros2check.
type Proc struct {
	In    io.WriteCloser
	lines chan string
}

// Start runs bin with args and env (appended to the process's); the
// process is killed and reaped at the test's end, its stderr logged if the
// test failed.
func Start(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
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
	p := &Proc{In: in, lines: make(chan string, 4)}
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

// Line returns the next line the program printed (30 s at most).
func (p *Proc) Line(t testing.TB) string {
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

// Matcher is a DDS writer or reader that knows its matched counterparts.
type Matcher interface{ Matched() (int, error) }

// AwaitMatch polls m until it matched a counterpart (20 s at most).
func AwaitMatch(t testing.TB, m Matcher) {
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

// SameMsg compares the payload b (hilrig's bytes) with the JSON the
// program printed, field by field: both through the codec into values,
// both back to JSON (one canonical text per value).
func SameMsg(t testing.TB, c *rosmsg.Codec, b []byte, printed string) {
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

// Case is one message type ros2check knows: its argument, the type and
// the message hilrig sends it.
type Case struct {
	Kind, Type string
	Msg        rosmsg.Msg
}

// Cases are sensor_msgs/Imu (fixed arrays, nested types, a string) and
// sensor_msgs/Image (strings, a uint8 sequence), every field set to a
// value of its own.
func Cases() []Case {
	data := make([]uint8, 1000)
	for i := range data {
		data[i] = uint8(i*13 + 1)
	}
	return []Case{
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
			"encoding": "mono8", "is_bigendian": uint8(0), "step": uint32(100), "data": data,
		}},
	}
}

// Writer is a ROS 2 writer of a peer adapter (peers/cyclonedds,
// peers/fastdds).
type Writer interface {
	Matcher
	Write(payload []byte, seq uint64, clock int32) error
	Close() error
}

// Reader is a ROS 2 reader of a peer adapter.
type Reader interface {
	Matcher
	Take(timeout time.Duration) ([]byte, int64, error)
	Release()
	Close() error
}

// HilrigToCheck: w (hilrig's writer on topic) writes c's message; the
// program, started by start with "read KIND TOPIC", must print the same
// fields.
func HilrigToCheck(t *testing.T, codec *rosmsg.Codec, c Case, w Writer, start func(args ...string) *Proc, topic string) {
	t.Helper()
	p := matched(t, start("read", c.Kind, topic))
	AwaitMatch(t, w)
	b, err := codec.Append(nil, c.Msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b, 1, 0); err != nil { // stamps on CLOCK_REALTIME
		t.Fatal(err)
	}
	SameMsg(t, codec, b, p.Line(t))
}

// CheckToHilrig: the program, started by start with "write KIND TOPIC",
// writes its message once r (hilrig's reader on topic) matched it; r must
// read the fields the program printed.
func CheckToHilrig(t *testing.T, codec *rosmsg.Codec, c Case, r Reader, start func(args ...string) *Proc, topic string) {
	t.Helper()
	p := matched(t, start("write", c.Kind, topic))
	AwaitMatch(t, r)
	if _, err := io.WriteString(p.In, "go\n"); err != nil {
		t.Fatal(err)
	}
	got := TakeOne(t, r, 20*time.Second)
	if got == nil {
		t.Fatal("hilrig's reader got nothing in 20 s")
	}
	SameMsg(t, codec, got, p.Line(t))
}

// Taker is the reading half of a peer's reader (agent.PeerReader).
type Taker interface {
	Take(timeout time.Duration) ([]byte, int64, error)
	Release()
}

// TakeOne takes r's next message, polling it every 100 ms for up to
// within, and returns a copy of its bytes, or nil if none came. A Take
// error fails the test.
func TakeOne(t testing.TB, r Taker, within time.Duration) []byte {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		data, _, err := r.Take(100 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			got := bytes.Clone(data)
			r.Release()
			return got
		}
	}
	return nil
}

// matched returns p once it printed "matched" (its endpoint matched ours).
func matched(t testing.TB, p *Proc) *Proc {
	t.Helper()
	if l := p.Line(t); l != "matched" {
		t.Fatalf("ros2check: %q, want matched", l)
	}
	return p
}

// Adapter is the ROS 2 side of a peer adapter under check.
type Adapter struct {
	// Name names the other program's side in subtest names ("c", "cpp").
	Name string
	// Start runs the program with args after its domain.
	Start     func(t *testing.T, args ...string) *Proc
	NewWriter func(ddsTopic, ddsType string) (Writer, error)
	NewReader func(ddsTopic, ddsType string) (Reader, error)
}

// PeerAdapter is the Adapter of a peer's ROS 2 endpoints (its
// NewROS2Writer and NewROS2Reader: reliable, keep-last 10, messages up to
// 4096 bytes, the reader not spinning) checked against the program bin,
// run with env and domain as its first argument.
func PeerAdapter[W Writer, R Reader](name, bin string, env []string, domain uint32,
	newWriter func(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (W, error),
	newReader func(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (R, error)) Adapter {
	return Adapter{
		Name: name,
		Start: func(t *testing.T, args ...string) *Proc {
			return Start(t, bin, env, append([]string{fmt.Sprint(domain)}, args...)...)
		},
		NewWriter: func(topic, typ string) (Writer, error) {
			w, err := newWriter(topic, typ, true, 10, 4096)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
		NewReader: func(topic, typ string) (Reader, error) {
			r, err := newReader(topic, typ, true, 10, 4096, false)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}

// CheckAll runs HilrigToCheck and CheckToHilrig over Cases on a.
func CheckAll(t *testing.T, a Adapter) {
	reg, err := rosmsg.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Cases() {
		codec, err := reg.Codec(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		topic := fmt.Sprintf("rt/hilrig_check/%s_%d", c.Kind, os.Getpid())
		ddsType := rosmsg.DDSTypeName(c.Type)
		start := func(t *testing.T) func(args ...string) *Proc {
			return func(args ...string) *Proc { return a.Start(t, args...) }
		}
		t.Run("hilrig-to-"+a.Name+"/"+c.Kind, func(t *testing.T) {
			w, err := a.NewWriter(topic+"_w", ddsType)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			HilrigToCheck(t, codec, c, w, start(t), topic+"_w")
		})
		t.Run(a.Name+"-to-hilrig/"+c.Kind, func(t *testing.T) {
			r, err := a.NewReader(topic+"_r", ddsType)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			CheckToHilrig(t, codec, c, r, start(t), topic+"_r")
		})
	}
}

// Codec is the codec of a shipped type; the test fails without it.
func Codec(t testing.TB, name string) *rosmsg.Codec {
	t.Helper()
	reg, err := rosmsg.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	c, err := reg.Codec(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Run runs t's command, failing the test with its output.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Need skips the test when a tool is not installed.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}
