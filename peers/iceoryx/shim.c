//go:build iceoryx

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "iceoryx_binding_c/runtime.h"
#include "iceoryx_binding_c/log.h"
#include "iceoryx_binding_c/publisher.h"
#include "iceoryx_binding_c/subscriber.h"
#include "iceoryx_binding_c/wait_set.h"
#include "iceoryx_binding_c/chunk.h"
#include "iceoryx_binding_c/enums.h"
#include "shim.h"

struct hlr_iox_pub {
	iox_pub_storage_t storage;
	iox_pub_t pub;
};

static inline int64_t now_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void hlr_iox_init(const char *name) {
	iox_set_loglevel(Iceoryx_LogLevel_Warn);
	iox_runtime_init(name);
}
void hlr_iox_shutdown(void) { iox_runtime_shutdown(); }

// QoS mapping (docs/peers.md): reliable = the publisher waits for a
// subscriber whose queue is full (WAIT_FOR_CONSUMER / BLOCK_PRODUCER);
// best effort = the oldest queued chunk is discarded.
hlr_iox_pub *hlr_iox_pub_new(const char *service, const char *instance, int reliable, int depth) {
	hlr_iox_pub *p = calloc(1, sizeof *p);
	iox_pub_options_t o;
	iox_pub_options_init(&o);
	o.historyCapacity = 0;
	o.nodeName = "hilrig";
	o.subscriberTooSlowPolicy = reliable ? ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER : ConsumerTooSlowPolicy_DISCARD_OLDEST_DATA;
	p->pub = iox_pub_init(&p->storage, service, instance, "data", &o);
	return p;
}

void hlr_iox_pub_free(hlr_iox_pub *p) {
	iox_pub_deinit(p->pub);
	free(p);
}

int hlr_iox_pub_matched(hlr_iox_pub *p) { return iox_pub_has_subscribers(p->pub) ? 1 : 0; }

int hlr_iox_write(hlr_iox_pub *p, const uint8_t *buf, uint32_t len, uint64_t seq, int clock) {
	// The stamp is taken first, before the loan and the copy into the
	// chunk: iceoryx's "write" is loan + copy + publish, as hilrig's copy
	// path stamps at the entry of Send, before its back-pressure wait and
	// its copy. (Stamped after the copy, a 1 MiB message measured without
	// its copy — and without a reliable loan's wait for the queue.)
	int64_t mono = now_ns(CLOCK_MONOTONIC), c = now_ns(clock);
	void *chunk = NULL;
	// An 8-byte user header carries the length (the C binding has no
	// getter for the chunk's payload size).
	enum iox_AllocationResult r = iox_pub_loan_aligned_chunk_with_user_header(p->pub, &chunk, len, 8, 8, 8);
	if (r != AllocationResult_SUCCESS)
		return (int)r + 1;
	uint64_t *uh = iox_chunk_header_to_user_header(iox_chunk_header_from_user_payload(chunk));
	*uh = len;
	uint8_t *d = chunk;
	memcpy(d + 24, buf + 24, len - 24);
	memcpy(d, &seq, 8);
	memcpy(d + 8, &mono, 8);
	memcpy(d + 16, &c, 8);
	iox_pub_publish_chunk(p->pub, chunk);
	return 0;
}

hlr_iox_sub *hlr_iox_sub_new(const char *service, const char *instance, int reliable, int depth, int spin) {
	hlr_iox_sub *s = calloc(1, sizeof *s);
	s->subStorage = calloc(1, sizeof(iox_sub_storage_t));
	iox_sub_options_t o;
	iox_sub_options_init(&o);
	if (depth < 1)
		depth = 1;
	if (depth > 256)
		depth = 256; // iceoryx's MAX_SUBSCRIBER_QUEUE_CAPACITY
	o.queueCapacity = depth;
	o.historyRequest = 0;
	o.nodeName = "hilrig";
	o.queueFullPolicy = reliable ? QueueFullPolicy_BLOCK_PRODUCER : QueueFullPolicy_DISCARD_OLDEST_DATA;
	s->sub = iox_sub_init(s->subStorage, service, instance, "data", &o);
	s->spin = spin;
	if (!spin) {
		s->wsStorage = calloc(1, sizeof(iox_ws_storage_t));
		s->ws = iox_ws_init(s->wsStorage);
		iox_ws_attach_subscriber_state(s->ws, s->sub, SubscriberState_HAS_DATA, 0, NULL);
	}
	return s;
}

void hlr_iox_sub_free(hlr_iox_sub *s) {
	hlr_iox_release(s);
	if (s->ws) {
		iox_ws_detach_subscriber_state(s->ws, s->sub, SubscriberState_HAS_DATA);
		iox_ws_deinit(s->ws);
		free(s->wsStorage);
	}
	iox_sub_deinit(s->sub);
	free(s->subStorage);
	free(s);
}

// take_one takes one chunk and stamps its receipt right after the take
// returned it (a stamp before the take could precede its arrival).
static int take_one(hlr_iox_sub *s) {
	const void *chunk = NULL;
	enum iox_ChunkReceiveResult r = iox_sub_take_chunk(s->sub, &chunk);
	if (r == ChunkReceiveResult_NO_CHUNK_AVAILABLE)
		return 0;
	if (r != ChunkReceiveResult_SUCCESS)
		return -1 - (int)r;
	const uint64_t *uh = iox_chunk_header_to_user_header_const(iox_chunk_header_from_user_payload_const(chunk));
	s->chunk = chunk;
	s->data = (uint8_t *)chunk;
	s->len = (uint32_t)*uh;
	s->recv = now_ns(CLOCK_MONOTONIC);
	return 1;
}

int hlr_iox_take(hlr_iox_sub *s, int64_t timeout_ns) {
	hlr_iox_release(s);
	int64_t deadline = now_ns(CLOCK_MONOTONIC) + timeout_ns;
	if (s->spin) {
		for (;;) {
			int n = take_one(s);
			if (n != 0 || now_ns(CLOCK_MONOTONIC) > deadline)
				return n;
		}
	}
	int n = take_one(s);
	if (n != 0)
		return n;
	struct timespec to = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
	iox_notification_info_t info[1];
	uint64_t missed = 0;
	if (iox_ws_timed_wait(s->ws, to, info, 1, &missed) == 0)
		return 0;
	return take_one(s);
}

void hlr_iox_release(hlr_iox_sub *s) {
	if (s->chunk) {
		iox_sub_release_chunk(s->sub, s->chunk);
		s->chunk = NULL;
	}
}

// 1 when a publisher's offer was connected to the subscription.
int hlr_iox_sub_matched(hlr_iox_sub *s) { return iox_sub_get_subscription_state(s->sub) == SubscribeState_SUBSCRIBED; }
