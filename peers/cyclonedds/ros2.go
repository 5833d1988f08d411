//go:build cyclonedds

package cyclonedds

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/hilrig/hilrig/ros2/rostopic"
)

// ROS 2 topics (issue 33; ros2.c): the DDS topic and type names are
// ROS 2's as given ("rt/imu", "sensor_msgs::msg::dds_::Imu_"); the
// samples are the message's XCDR1 bytes, header included, carried by an
// opaque sertype without XTypes type information; QoS reliable or best
// effort, keep-last depth, volatile. Write and Take are the raw writer's
// and reader's (Writer, Reader), so the agent's hot path is the same.

// NewROS2Writer opens a writer on the DDS topic ddsTopic of the ROS 2
// type ddsType. maxPayload is unused (samples are sized per write).
func (p *Peer) NewROS2Writer(ddsTopic, ddsType string, reliable bool, depth, maxPayload int) (*Writer, error) {
	t, ty := C.CString(ddsTopic), C.CString(ddsType)
	defer C.free(unsafe.Pointer(t))
	defer C.free(unsafe.Pointer(ty))
	var rc C.dds_return_t
	w := C.hlr_cd_ros2_writer_new(p.pp, t, ty, cbool(reliable), C.int(depth), &rc)
	if w == nil {
		return nil, fmt.Errorf("cyclonedds: ROS 2 writer on %q (%s): %w", ddsTopic, ddsType, ddsErr(C.int(rc)))
	}
	return &Writer{w: w.w, ros: w}, nil
}

// NewROS2Reader opens a reader on the DDS topic ddsTopic of the ROS 2
// type ddsType; Take returns the message's bytes, header included, on
// Cyclone's serdata until Release.
func (p *Peer) NewROS2Reader(ddsTopic, ddsType string, reliable bool, depth, maxPayload int, spin bool) (*Reader, error) {
	t, ty := C.CString(ddsTopic), C.CString(ddsType)
	defer C.free(unsafe.Pointer(t))
	defer C.free(unsafe.Pointer(ty))
	var rc C.dds_return_t
	r := C.hlr_cd_ros2_reader_new(p.pp, t, ty, cbool(reliable), C.int(depth), cbool(spin), &rc)
	if r == nil {
		return nil, fmt.Errorf("cyclonedds: ROS 2 reader on %q (%s): %w", ddsTopic, ddsType, ddsErr(C.int(rc)))
	}
	return &Reader{r: r}, nil
}

// Forward writes a ROS 2 message as it is, its header stamp untouched (a
// bridge forwarding another bus's message). 0 allocations on the Go side.
func (w *Writer) Forward(payload []byte) error {
	if w.ros == nil {
		return fmt.Errorf("cyclonedds: Forward on a raw writer")
	}
	if len(payload) < 4 {
		return fmt.Errorf("cyclonedds: ROS 2 message of %d bytes has no encapsulation header", len(payload))
	}
	return w.rc(C.hlr_cd_ros2_write(w.ros, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), C.HLR_NO_STAMP, 0))
}

func (w *Writer) rc(rc C.dds_return_t) error {
	if rc == C.DDS_RETCODE_TIMEOUT {
		return fmt.Errorf("cyclonedds: ROS 2 write: %w", ErrTimeout)
	}
	if rc < 0 {
		return fmt.Errorf("cyclonedds: ROS 2 write: %w", ddsErr(C.int(rc)))
	}
	return nil
}

// writeROS2 stamps and writes one ROS 2 message. 0 allocations on the Go
// side (Cyclone's serdata is allocated in C).
func (w *Writer) writeROS2(payload []byte, clock int32) error {
	if len(payload) < rostopic.StampOffset+8 {
		return fmt.Errorf("cyclonedds: ROS 2 message of %d bytes has no header stamp", len(payload))
	}
	return w.rc(C.hlr_cd_ros2_write(w.ros, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), rostopic.StampOffset, C.int(clock)))
}
