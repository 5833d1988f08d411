//go:build cyclonedds

package cyclonedds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/ros2/ros2test"
)

// TestROS2IndependentCyclone (issue 33, scope 4a): a C program built with
// Debian's `idlc -t` from the repo's IDL of the shipped types — Cyclone's
// generated types and serializer, nothing of hilrig's codec — reads
// through Cyclone what hilrig's ROS 2 writer writes and writes what
// hilrig's ROS 2 reader reads (ros2test.Cases: Imu, Image), every field
// compared.
func TestROS2IndependentCyclone(t *testing.T) {
	ros2test.Need(t, "idlc", "cc", "pkg-config")
	dir := t.TempDir()
	ros2test.Run(t, "idlc", "-t", "-x", "final", "-o", dir, "../../ros2/rosmsg/idl/shipped.idl")
	flags := strings.Fields(ros2test.Run(t, "pkg-config", "--cflags", "--libs", "CycloneDDS"))
	bin := filepath.Join(dir, "ros2check")
	ros2test.Run(t, "cc", append([]string{"-O1", "-Wall", "-o", bin, "testdata/ros2check/check.c", filepath.Join(dir, "shipped.c"), "-I" + dir}, flags...)...)

	p, err := Open(Config{Domain: uint32(150 + os.Getpid()%50)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// The program's participant is configured as the adapter's: loopback
	// only, no multicast, unicast discovery (the rig's rule for every DDS).
	env := []string{"CYCLONEDDS_URI=" + strings.ReplaceAll(p.cfg.xml(), "\n", "")}
	ros2test.CheckAll(t, ros2test.PeerAdapter("c", bin, env, p.cfg.Domain, p.NewROS2Writer, p.NewROS2Reader))
}
