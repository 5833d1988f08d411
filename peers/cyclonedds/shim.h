// Thin C layer over the Cyclone DDS C API for hilrig's peer adapter: the
// send stamp is taken here immediately before dds_write and the receive
// stamp the moment the wait returns, so Go's scheduling is outside both.
#ifndef HLR_CDDS_SHIM_H
#define HLR_CDDS_SHIM_H
#include <stdint.h>
#include <dds/dds.h>

typedef struct {
	dds_entity_t rd, ws, cond;
	int spin;
	// the last take: a loan of one sample (data points into it)
	void *sample;
	uint8_t *data;
	uint32_t len;
	int64_t recv;
	int loaned;
	// opaque: a ROS 2 reader (ros2.c): sample is a serdata reference.
	int opaque;
} hlr_cd_reader;

// A ROS 2 writer (ros2.c): the writer and the opaque sertype of its topic.
typedef struct {
	dds_entity_t w;
	struct ddsi_sertype *st;
} hlr_cd_ros2_writer;

// Returns a participant (> 0) or a negative DDS return code.
dds_entity_t hlr_cd_participant(uint32_t domain, const char *xml);
// qos: reliable (1) or best effort; depth as hilrig's Contract.Depth.
dds_entity_t hlr_cd_writer(dds_entity_t pp, const char *topic, int reliable, int depth);
hlr_cd_reader *hlr_cd_reader_new(dds_entity_t pp, const char *topic, int reliable, int depth, int spin, dds_return_t *rc);
void hlr_cd_reader_free(hlr_cd_reader *r);
// Stamps seq, CLOCK_MONOTONIC and clock into buf[0:24], then dds_write.
dds_return_t hlr_cd_write(dds_entity_t wr, uint8_t *buf, uint32_t len, uint64_t seq, int clock);
// Waits up to timeout_ns; 1 = a sample (r->data, r->len, r->recv), 0 =
// timeout, < 0 = DDS error.
int hlr_cd_take(hlr_cd_reader *r, int64_t timeout_ns);
void hlr_cd_release(hlr_cd_reader *r);
const char *hlr_cd_err(int rc);
// A reader on topic t with QoS q (shim.c; the raw and the ROS 2 readers).
hlr_cd_reader *hlr_cd_reader_on(dds_entity_t pp, dds_entity_t t, const dds_qos_t *q, int spin, dds_return_t *rc);

// ROS 2 topics (ros2.c): topic name and ROS type name as given, the
// profile's reliability and keep-last depth, volatile, XCDR1.
hlr_cd_ros2_writer *hlr_cd_ros2_writer_new(dds_entity_t pp, const char *topic, const char *type_name, int reliable, int depth, dds_return_t *rc);
void hlr_cd_ros2_writer_free(hlr_cd_ros2_writer *w);
// Stamps the header stamp at buf[stamp_at:+8] (int32 sec, uint32 nanosec
// of clock) immediately before writing buf (XCDR1, header included);
// stamp_at HLR_NO_STAMP writes buf as it is (a bridge forwarding).
#define HLR_NO_STAMP UINT32_MAX
dds_return_t hlr_cd_ros2_write(hlr_cd_ros2_writer *w, uint8_t *buf, uint32_t len, uint32_t stamp_at, int clock);
hlr_cd_reader *hlr_cd_ros2_reader_new(dds_entity_t pp, const char *topic, const char *type_name, int reliable, int depth, int spin, dds_return_t *rc);
int hlr_cd_take_opaque(hlr_cd_reader *r);
void hlr_cd_release_opaque(hlr_cd_reader *r);
#endif
