//go:build cyclonedds

#include <string.h>
#include <stdlib.h>
#include <time.h>
#include "shim.h"
#include "raw.h"

static inline int64_t now_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

dds_entity_t hlr_cd_participant(uint32_t domain, const char *xml) {
	dds_entity_t d = dds_create_domain(domain, xml);
	if (d < 0 && d != DDS_RETCODE_PRECONDITION_NOT_MET) // exists already: reuse
		return d;
	return dds_create_participant(domain, NULL, NULL);
}

// The QoS mapping (docs/peers.md): hilrig reliable = DDS reliable with
// KEEP_ALL bounded by depth samples, so a slow reader makes the writer
// block (no loss, as hilrig's reliable publisher); best effort = DDS best
// effort KEEP_LAST depth (a slow reader loses the oldest).
static dds_qos_t *qos(int reliable, int depth) {
	dds_qos_t *q = dds_create_qos();
	if (depth < 1)
		depth = 1;
	if (reliable) {
		dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(10));
		dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
		dds_qset_resource_limits(q, depth, DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED);
	} else {
		dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
		dds_qset_history(q, DDS_HISTORY_KEEP_LAST, depth);
	}
	// Reliable is TRANSIENT_LOCAL: a reader that matches the writer a
	// moment after the writer matched it (discovery is per side) still
	// gets the samples already written — hilrig's started subscriber sees
	// every later message. Best effort stays VOLATILE.
	dds_qset_durability(q, reliable ? DDS_DURABILITY_TRANSIENT_LOCAL : DDS_DURABILITY_VOLATILE);
	return q;
}

static dds_entity_t topic(dds_entity_t pp, const char *name) {
	return dds_create_topic(pp, &hlr_Raw_desc, name, NULL, NULL);
}

dds_entity_t hlr_cd_writer(dds_entity_t pp, const char *name, int reliable, int depth) {
	dds_entity_t t = topic(pp, name);
	if (t < 0)
		return t;
	dds_qos_t *q = qos(reliable, depth);
	dds_entity_t w = dds_create_writer(pp, t, q, NULL);
	dds_delete_qos(q);
	return w;
}

hlr_cd_reader *hlr_cd_reader_new(dds_entity_t pp, const char *name, int reliable, int depth, int spin, dds_return_t *rc) {
	dds_entity_t t = topic(pp, name);
	if (t < 0) {
		*rc = t;
		return NULL;
	}
	dds_qos_t *q = qos(reliable, depth);
	hlr_cd_reader *r = hlr_cd_reader_on(pp, t, q, spin, rc);
	dds_delete_qos(q);
	return r;
}

hlr_cd_reader *hlr_cd_reader_on(dds_entity_t pp, dds_entity_t t, const dds_qos_t *q, int spin, dds_return_t *rc) {
	dds_entity_t rd = dds_create_reader(pp, t, q, NULL);
	if (rd < 0) {
		*rc = rd;
		return NULL;
	}
	hlr_cd_reader *r = calloc(1, sizeof *r);
	r->rd = rd;
	r->spin = spin;
	r->cond = dds_create_readcondition(rd, DDS_ANY_STATE);
	r->ws = dds_create_waitset(pp);
	if (r->cond < 0 || r->ws < 0 || (*rc = dds_waitset_attach(r->ws, r->cond, 0)) < 0) {
		*rc = r->cond < 0 ? r->cond : r->ws < 0 ? r->ws : *rc;
		hlr_cd_reader_free(r);
		return NULL;
	}
	*rc = 0;
	return r;
}

void hlr_cd_reader_free(hlr_cd_reader *r) {
	if (!r)
		return;
	hlr_cd_release(r);
	if (r->ws > 0)
		dds_delete(r->ws);
	if (r->cond > 0)
		dds_delete(r->cond);
	dds_delete(r->rd);
	free(r);
}

dds_return_t hlr_cd_write(dds_entity_t wr, uint8_t *buf, uint32_t len, uint64_t seq, int clock) {
	hlr_Raw s = {.data = {._maximum = len, ._length = len, ._buffer = buf, ._release = false}};
	memcpy(buf, &seq, 8);
	int64_t mono = now_ns(CLOCK_MONOTONIC), c = now_ns(clock);
	memcpy(buf + 8, &mono, 8);
	memcpy(buf + 16, &c, 8);
	return dds_write(wr, &s);
}

// take_one takes one valid sample on loan and stamps its receipt right
// after the take returned it — the first line of a callback. (A stamp
// taken before the take could precede the sample's arrival: the sample
// may land between the stamp and the take.)
static int take_one(hlr_cd_reader *r) {
	if (r->opaque)
		return hlr_cd_take_opaque(r);
	for (;;) {
		void *samples[1] = {NULL};
		dds_sample_info_t info;
		int n = dds_take(r->rd, samples, &info, 1, 1);
		if (n <= 0)
			return n;
		if (!info.valid_data) {
			dds_return_loan(r->rd, samples, n);
			continue;
		}
		hlr_Raw *s = samples[0];
		r->sample = samples[0];
		r->loaned = 1;
		r->data = s->data._buffer;
		r->len = s->data._length;
		r->recv = now_ns(CLOCK_MONOTONIC);
		return 1;
	}
}

int hlr_cd_take(hlr_cd_reader *r, int64_t timeout_ns) {
	hlr_cd_release(r);
	int64_t deadline = now_ns(CLOCK_MONOTONIC) + timeout_ns;
	if (r->spin) {
		for (;;) {
			int n = take_one(r);
			if (n != 0 || now_ns(CLOCK_MONOTONIC) > deadline)
				return n;
		}
	}
	int n = take_one(r);
	if (n != 0)
		return n;
	dds_return_t rc = dds_waitset_wait(r->ws, NULL, 0, timeout_ns);
	if (rc <= 0)
		return rc;
	return take_one(r);
}

void hlr_cd_release(hlr_cd_reader *r) {
	if (r->loaned && r->opaque) {
		hlr_cd_release_opaque(r);
		r->loaned = 0;
	} else if (r->loaned) {
		void *samples[1] = {r->sample};
		dds_return_loan(r->rd, samples, 1);
		r->loaned = 0;
	}
}

const char *hlr_cd_err(int rc) { return dds_strretcode(rc); }
