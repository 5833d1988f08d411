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
} hlr_cd_reader;

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
#endif
