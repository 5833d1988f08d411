// Thin C layer over iceoryx 2.0's C binding for hilrig's peer adapter:
// stamps taken right before publish and the moment the wait returns.
#ifndef HLR_IOX_SHIM_H
#define HLR_IOX_SHIM_H
#include <stdint.h>

typedef struct hlr_iox_pub hlr_iox_pub;
typedef struct {
	void *sub;  // iox_sub_t
	void *ws;   // iox_ws_t
	void *subStorage, *wsStorage;
	int spin;
	const void *chunk; // the last take
	uint8_t *data;
	uint32_t len;
	int64_t recv;
} hlr_iox_sub;

void hlr_iox_init(const char *name);
void hlr_iox_shutdown(void);
hlr_iox_pub *hlr_iox_pub_new(const char *service, const char *instance, int reliable, int depth);
void hlr_iox_pub_free(hlr_iox_pub *p);
int hlr_iox_pub_matched(hlr_iox_pub *p);
// Loans a chunk of len bytes, copies buf into it, stamps seq/mono/clock
// into its first 24 bytes right before publishing. 0 or the iceoryx
// AllocationResult + 1.
int hlr_iox_write(hlr_iox_pub *p, const uint8_t *buf, uint32_t len, uint64_t seq, int clock);
hlr_iox_sub *hlr_iox_sub_new(const char *service, const char *instance, int reliable, int depth, int spin);
void hlr_iox_sub_free(hlr_iox_sub *s);
// 1 = a chunk (s->data, s->len, s->recv), 0 = timeout, < 0 = error.
int hlr_iox_take(hlr_iox_sub *s, int64_t timeout_ns);
void hlr_iox_release(hlr_iox_sub *s);
int hlr_iox_sub_matched(hlr_iox_sub *s);
#endif
