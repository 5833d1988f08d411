// C interface of the Fast DDS 2.9 C++ shim (shim.cc) for hilrig's peer
// adapter: the send stamp is taken right before DataWriter::write, the
// receive stamp the moment the wait returns.
#ifndef HLR_FD_SHIM_H
#define HLR_FD_SHIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct hlr_fd_peer hlr_fd_peer;
typedef struct hlr_fd_writer hlr_fd_writer;
typedef struct {
	void *impl;
	int spin;
	uint8_t *data;
	uint32_t len;
	int64_t recv;
} hlr_fd_reader;

// transport: 0 = UDPv4 on loopback only, 1 = shared memory for data
// (with UDPv4 on loopback beside it), 2 = shared memory only (discovery
// too: for processes that share /dev/shm but no network).
// addr: the only local address (NULL: 127.0.0.1); peers: n unicast
// discovery addresses (NULL: 127.0.0.1).
hlr_fd_peer *hlr_fd_open(uint32_t domain, int transport, uint32_t shm_segment, const char *addr, const char **peers, int npeers, char *err, int errlen);
void hlr_fd_close(hlr_fd_peer *p);
hlr_fd_writer *hlr_fd_writer_new(hlr_fd_peer *p, const char *topic, int reliable, int depth, uint32_t max_payload, char *err, int errlen);
void hlr_fd_writer_free(hlr_fd_peer *p, hlr_fd_writer *w);
int hlr_fd_matched(hlr_fd_writer *w);
// 0, 1 = timeout, 2 = other error.
int hlr_fd_write(hlr_fd_writer *w, uint8_t *buf, uint32_t len, uint64_t seq, int clock);
hlr_fd_reader *hlr_fd_reader_new(hlr_fd_peer *p, const char *topic, int reliable, int depth, uint32_t max_payload, int spin, char *err, int errlen);
void hlr_fd_reader_free(hlr_fd_peer *p, hlr_fd_reader *r);
// 1 = a sample (r->data, r->len, r->recv), 0 = timeout, < 0 = error.
int hlr_fd_take(hlr_fd_reader *r, int64_t timeout_ns);
int hlr_fd_reader_matched(hlr_fd_reader *r);

// ROS 2 topics: topic and ROS type name as given, the profile's
// reliability and keep-last depth, volatile, XCDR1, no type information;
// messages up to max bytes, encapsulation header included.
hlr_fd_writer *hlr_fd_ros2_writer_new(hlr_fd_peer *p, const char *topic, const char *type_name, int reliable, int depth, uint32_t max, char *err, int errlen);
// Stamps buf[stamp_at:+8] (int32 sec, uint32 nanosec of clock) right
// before DataWriter::write; HLR_NO_STAMP writes buf as it is (a bridge
// forwarding). 0, 1 = timeout, 2 = other error.
#define HLR_NO_STAMP UINT32_MAX
int hlr_fd_ros2_write(hlr_fd_writer *w, uint8_t *buf, uint32_t len, uint32_t stamp_at, int clock);
hlr_fd_reader *hlr_fd_ros2_reader_new(hlr_fd_peer *p, const char *topic, const char *type_name, int reliable, int depth, uint32_t max, int spin, char *err, int errlen);

#ifdef __cplusplus
}
#endif
#endif
