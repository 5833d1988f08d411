//go:build fastdds

package fastdds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/ros2/ros2test"
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
	ros2test.CheckAll(t, ros2test.PeerAdapter("cpp", bin, env, p.cfg.Domain, p.NewROS2Writer, p.NewROS2Reader))
}
