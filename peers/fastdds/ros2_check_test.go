//go:build fastdds

package fastdds

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestROS2IndependentFastDDS (issue 33, scope 4a): a C++ program built
// with Debian's fastddsgen (no -typeobject: no type object) from the
// repo's IDL of the shipped types — Fast CDR's serializer, nothing of
// hilrig's codec — reads through Fast DDS what hilrig's ROS 2 writer
// writes and writes what hilrig's ROS 2 reader reads (ros2test.Cases:
// Imu, Image), every field compared. Both participants UDPv4 on
// 127.0.0.1 only, unicast discovery.
func TestROS2IndependentFastDDS(t *testing.T) {
	ros2test.Need(t, "fastddsgen", "g++")
	dir := t.TempDir()
	idl, err := filepath.Abs("../../ros2/rosmsg/idl/shipped.idl")
	if err != nil {
		t.Fatal(err)
	}
	ros2test.Run(t, "fastddsgen", "-d", dir, "-replace", idl)
	bin := filepath.Join(dir, "ros2check")
	ros2test.Run(t, "g++", "-std=c++14", "-O1", "-o", bin, "testdata/ros2check/check.cc",
		filepath.Join(dir, "shipped.cxx"), filepath.Join(dir, "shippedPubSubTypes.cxx"), "-I"+dir, "-lfastrtps", "-lfastcdr")

	p, err := Open(Config{Domain: uint32(150 + os.Getpid()%50), Transport: UDP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// No XML profile applies (Open unset the variables naming one for this
	// process and its children); the program configures its participant.
	env := []string{"SKIP_DEFAULT_XML=1"}
	reg, err := rosmsg.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ros2test.Cases() {
		codec, err := reg.Codec(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		topic := rostopic.Topic{Name: fmt.Sprintf("hilrig_check/%s_%d", c.Kind, os.Getpid()), Type: c.Type}
		start := func(t *testing.T) func(args ...string) *ros2test.Proc {
			return func(args ...string) *ros2test.Proc {
				return ros2test.Start(t, bin, env, append([]string{fmt.Sprint(p.cfg.Domain)}, args...)...)
			}
		}
		t.Run("hilrig-to-cpp/"+c.Kind, func(t *testing.T) {
			w, err := p.NewROS2Writer(topic.DDSTopic()+"_w", topic.DDSType(), true, 10, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ros2test.HilrigToCheck(t, codec, c, w, start(t), topic.DDSTopic()+"_w")
		})
		t.Run("cpp-to-hilrig/"+c.Kind, func(t *testing.T) {
			r, err := p.NewROS2Reader(topic.DDSTopic()+"_r", topic.DDSType(), true, 10, 4096, false)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ros2test.CheckToHilrig(t, codec, c, r, start(t), topic.DDSTopic()+"_r")
		})
	}
}
