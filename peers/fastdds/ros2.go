//go:build fastdds

package fastdds

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/hilrig/hilrig/ros2/rostopic"
)

// ROS 2 topics (issue 33; the end of shim.cc): the DDS topic and type
// names are ROS 2's as given ("rt/imu", "sensor_msgs::msg::dds_::Imu_");
// the samples are the message's XCDR1 bytes, header included, through a
// TopicDataType without type object or type information; QoS reliable or
// best effort, keep-last depth, volatile. Take is the raw reader's.

// NewROS2Writer opens a writer on the DDS topic ddsTopic of the ROS 2
// type ddsType, messages up to maxPayload bytes.
func (p *Peer) NewROS2Writer(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (*Writer, error) {
	t, ty := C.CString(ddsTopic), C.CString(ddsType)
	defer C.free(unsafe.Pointer(t))
	defer C.free(unsafe.Pointer(ty))
	errb := make([]byte, 256)
	w := C.hlr_fd_ros2_writer_new(p.p, t, ty, cbool(reliable), C.int(depth), C.uint32_t(maxPayload), (*C.char)(unsafe.Pointer(&errb[0])), C.int(len(errb)))
	if w == nil {
		return nil, fmt.Errorf("fastdds: ROS 2 writer on %q (%s): %s", ddsTopic, ddsType, cerr(errb))
	}
	return &Writer{p: p, w: w, ros: true}, nil
}

// NewROS2Reader opens a reader on the DDS topic ddsTopic of the ROS 2
// type ddsType; Take returns the message's bytes, header included.
func (p *Peer) NewROS2Reader(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (*Reader, error) {
	t, ty := C.CString(ddsTopic), C.CString(ddsType)
	defer C.free(unsafe.Pointer(t))
	defer C.free(unsafe.Pointer(ty))
	errb := make([]byte, 256)
	r := C.hlr_fd_ros2_reader_new(p.p, t, ty, cbool(reliable), C.int(depth), C.uint32_t(maxPayload), cbool(spin), (*C.char)(unsafe.Pointer(&errb[0])), C.int(len(errb)))
	if r == nil {
		return nil, fmt.Errorf("fastdds: ROS 2 reader on %q (%s): %s", ddsTopic, ddsType, cerr(errb))
	}
	return &Reader{p: p, r: r}, nil
}

// writeROS2 stamps and writes one ROS 2 message. 0 allocations on the Go
// side.
func (w *Writer) writeROS2(payload []byte, clock int32) error {
	if len(payload) < rostopic.StampOffset+8 {
		return fmt.Errorf("fastdds: ROS 2 message of %d bytes has no header stamp", len(payload))
	}
	return rc(C.hlr_fd_ros2_write(w.w, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), rostopic.StampOffset, C.int(clock)))
}

// Forward writes a ROS 2 message as it is, its header stamp untouched (a
// bridge forwarding another bus's message). 0 allocations on the Go side.
func (w *Writer) Forward(payload []byte) error {
	if !w.ros {
		return errors.New("fastdds: Forward on a raw writer")
	}
	if len(payload) < 4 {
		return fmt.Errorf("fastdds: ROS 2 message of %d bytes has no encapsulation header", len(payload))
	}
	return rc(C.hlr_fd_ros2_write(w.w, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), C.HLR_NO_STAMP, 0))
}

func rc(n C.int) error {
	switch n {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("fastdds: ROS 2 write: %w", os.ErrDeadlineExceeded)
	}
	return errors.New("fastdds: ROS 2 write failed")
}
