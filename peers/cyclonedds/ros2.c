//go:build cyclonedds

// ROS 2 topics on Cyclone DDS (issue 33): an opaque sertype whose samples
// are a ROS 2 message's XCDR1 bytes as is (encapsulation header
// included), registered under the ROS type name
// ("sensor_msgs::msg::dds_::Imu_"), unkeyed, with no XTypes type
// information (type_id/type_map/type_info NULL: matching by type name, as
// with `idlc -t`). Writers hand Cyclone a serdata holding the bytes
// (dds_writecdr), readers take serdatas (dds_takecdr) and read the bytes
// in place; nothing is serialised or deserialised in between, so any
// ROS 2 type the Go side can encode travels, not only those with a
// generated descriptor.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dds/dds.h"
#include "dds/ddsi/ddsi_sertype.h"
#include "dds/ddsi/ddsi_serdata.h"
#include "dds/ddsi/q_radmin.h"
#include "shim.h"

// A sample in application form (dds_write/dds_take, not used by the
// adapter but kept consistent): bytes with their encapsulation header.
typedef struct {
	uint8_t *buf;
	uint32_t len, cap;
} hlr_opaque;

struct hlr_sd {
	struct ddsi_serdata c;
	uint32_t size; // bytes in data, encapsulation header included
	uint8_t data[];
};

static struct hlr_sd *sd_new(const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, size_t size) {
	if (size > UINT32_MAX)
		return NULL;
	struct hlr_sd *d = malloc(sizeof *d + size);
	if (!d)
		return NULL;
	ddsi_serdata_init(&d->c, type, kind);
	d->size = (uint32_t)size;
	return d;
}

static bool sd_eqkey(const struct ddsi_serdata *a, const struct ddsi_serdata *b) {
	(void)a, (void)b;
	return true; // keyless: one instance
}

static uint32_t sd_get_size(const struct ddsi_serdata *d) { return ((const struct hlr_sd *)d)->size; }

// sd_from_ser copies a received sample out of its fragment chain (the
// fragments may overlap; each adds the bytes past what is copied).
static struct ddsi_serdata *sd_from_ser(const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, const struct nn_rdata *frag, size_t size) {
	struct hlr_sd *d = sd_new(type, kind, size);
	if (!d)
		return NULL;
	uint32_t off = 0;
	for (; frag; frag = frag->nextfrag) {
		if (frag->maxp1 <= off)
			continue;
		if (frag->min > off || frag->maxp1 > size) {
			free(d);
			return NULL;
		}
		const unsigned char *p = NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_PAYLOAD_OFF(frag));
		memcpy(d->data + off, p + off - frag->min, frag->maxp1 - off);
		off = frag->maxp1;
	}
	if (off != size) {
		free(d);
		return NULL;
	}
	return &d->c;
}

static struct ddsi_serdata *sd_from_ser_iov(const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, ddsrt_msg_iovlen_t niov, const ddsrt_iovec_t *iov, size_t size) {
	struct hlr_sd *d = sd_new(type, kind, size);
	if (!d)
		return NULL;
	size_t off = 0;
	for (ddsrt_msg_iovlen_t i = 0; i < niov && off < size; i++) {
		size_t n = iov[i].iov_len;
		if (n > size - off)
			n = size - off;
		memcpy(d->data + off, iov[i].iov_base, n);
		off += n;
	}
	return &d->c;
}

static struct ddsi_serdata *sd_from_keyhash(const struct ddsi_sertype *type, const struct ddsi_keyhash *kh) {
	(void)kh;
	struct hlr_sd *d = sd_new(type, SDK_KEY, 0);
	return d ? &d->c : NULL;
}

static struct ddsi_serdata *sd_from_sample(const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, const void *sample) {
	const hlr_opaque *s = sample;
	size_t n = kind == SDK_DATA ? s->len : 0;
	struct hlr_sd *d = sd_new(type, kind, n);
	if (!d)
		return NULL;
	if (n)
		memcpy(d->data, s->buf, n);
	return &d->c;
}

static void sd_to_ser(const struct ddsi_serdata *d, size_t off, size_t sz, void *buf) {
	memcpy(buf, ((const struct hlr_sd *)d)->data + off, sz);
}

static struct ddsi_serdata *sd_to_ser_ref(const struct ddsi_serdata *d, size_t off, size_t sz, ddsrt_iovec_t *ref) {
	ref->iov_base = (void *)(((const struct hlr_sd *)d)->data + off);
	ref->iov_len = (ddsrt_iov_len_t)sz;
	return ddsi_serdata_ref(d);
}

static void sd_to_ser_unref(struct ddsi_serdata *d, const ddsrt_iovec_t *ref) {
	(void)ref;
	ddsi_serdata_unref(d);
}

static bool sd_to_sample(const struct ddsi_serdata *d, void *sample, void **bufptr, void *buflim) {
	(void)bufptr, (void)buflim;
	const struct hlr_sd *x = (const struct hlr_sd *)d;
	hlr_opaque *s = sample;
	if (x->size > s->cap)
		return false;
	memcpy(s->buf, x->data, x->size);
	s->len = x->size;
	return true;
}

static struct ddsi_serdata *sd_to_untyped(const struct ddsi_serdata *d) {
	struct hlr_sd *u = sd_new(d->type, SDK_KEY, 0);
	if (!u)
		return NULL;
	u->c.type = NULL; // untyped: not bound to the sertype (Cyclone's contract)
	return &u->c;
}

static bool sd_untyped_to_sample(const struct ddsi_sertype *type, const struct ddsi_serdata *d, void *sample, void **bufptr, void *buflim) {
	(void)type, (void)d, (void)sample, (void)bufptr, (void)buflim;
	return true; // keyless: no key fields to fill
}

static void sd_free(struct ddsi_serdata *d) { free(d); }

static size_t sd_print(const struct ddsi_sertype *type, const struct ddsi_serdata *d, char *buf, size_t size) {
	(void)type;
	return (size_t)snprintf(buf, size, "opaque ROS 2 message, %u bytes", ((const struct hlr_sd *)d)->size);
}

static void sd_get_keyhash(const struct ddsi_serdata *d, struct ddsi_keyhash *buf, bool force_md5) {
	(void)d, (void)force_md5;
	memset(buf->value, 0, sizeof buf->value);
}

static const struct ddsi_serdata_ops sd_ops = {
	.eqkey = sd_eqkey,
	.get_size = sd_get_size,
	.from_ser = sd_from_ser,
	.from_ser_iov = sd_from_ser_iov,
	.from_keyhash = sd_from_keyhash,
	.from_sample = sd_from_sample,
	.to_ser = sd_to_ser,
	.to_ser_ref = sd_to_ser_ref,
	.to_ser_unref = sd_to_ser_unref,
	.to_sample = sd_to_sample,
	.to_untyped = sd_to_untyped,
	.untyped_to_sample = sd_untyped_to_sample,
	.free = sd_free,
	.print = sd_print,
	.get_keyhash = sd_get_keyhash,
};

static void st_free(struct ddsi_sertype *tp) {
	ddsi_sertype_fini(tp);
	free(tp);
}

static void st_zero_samples(const struct ddsi_sertype *tp, void *samples, size_t count) {
	(void)tp;
	memset(samples, 0, count * sizeof(hlr_opaque));
}

static void st_realloc_samples(void **ptrs, const struct ddsi_sertype *tp, void *old, size_t oldcount, size_t count) {
	(void)tp;
	const size_t sz = sizeof(hlr_opaque);
	char *n = oldcount == count ? old : realloc(old, count * sz);
	if (n && count > oldcount)
		memset(n + oldcount * sz, 0, (count - oldcount) * sz);
	for (size_t i = 0; i < count; i++)
		ptrs[i] = n ? n + i * sz : NULL;
}

static void st_free_samples(const struct ddsi_sertype *tp, void **ptrs, size_t count, dds_free_op_t op) {
	(void)tp, (void)count;
	// Sample buffers belong to the application (hlr_opaque.buf).
	if ((op & DDS_FREE_ALL_BIT) && count > 0)
		free(ptrs[0]);
}

static bool st_equal(const struct ddsi_sertype *a, const struct ddsi_sertype *b) {
	(void)a, (void)b;
	return true; // Cyclone compared the type names and ops already
}

static uint32_t st_hash(const struct ddsi_sertype *tp) {
	(void)tp;
	return 0x524f5332u; // "ROS2": the name is hashed by Cyclone
}

static size_t st_get_serialized_size(const struct ddsi_sertype *tp, const void *sample) {
	(void)tp;
	return ((const hlr_opaque *)sample)->len;
}

static bool st_serialize_into(const struct ddsi_sertype *tp, const void *sample, void *dst, size_t sz) {
	(void)tp;
	const hlr_opaque *s = sample;
	if (sz < s->len)
		return false;
	memcpy(dst, s->buf, s->len);
	return true;
}

static const struct ddsi_sertype_ops st_ops = {
	.version = ddsi_sertype_v0,
	.arg = NULL,
	.free = st_free,
	.zero_samples = st_zero_samples,
	.realloc_samples = st_realloc_samples,
	.free_samples = st_free_samples,
	.equal = st_equal,
	.hash = st_hash,
	// No XTypes type identifier, map or information: nothing for a
	// Fast DDS 3 peer to refuse; matching is by type name (issue 33).
	.type_id = NULL,
	.type_map = NULL,
	.type_info = NULL,
	.derive_sertype = NULL,
	.get_serialized_size = st_get_serialized_size,
	.serialize_into = st_serialize_into,
};

static inline int64_t ros_now(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The ROS 2 QoS profiles (rmw_qos_profile_default, _sensor_data):
// reliability as given, keep-last depth, volatile; XCDR1, the only data
// representation ROS 2 uses.
static dds_qos_t *ros_qos(int reliable, int depth) {
	dds_qos_t *q = dds_create_qos();
	if (depth < 1)
		depth = 1;
	dds_qset_reliability(q, reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, DDS_MSECS(100));
	dds_qset_history(q, DDS_HISTORY_KEEP_LAST, depth);
	dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
	dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
	dds_qset_data_representation(q, 1, &xcdr1);
	return q;
}

// ros_topic creates (or finds) the topic name of the opaque type
// type_name; *st is the sertype the topic uses.
static dds_entity_t ros_topic(dds_entity_t pp, const char *name, const char *type_name, struct ddsi_sertype **st) {
	struct ddsi_sertype *t = calloc(1, sizeof *t);
	if (!t)
		return DDS_RETCODE_OUT_OF_RESOURCES;
	ddsi_sertype_init(t, type_name, &st_ops, &sd_ops, true);
	// Cyclone replaces t by the equal sertype it has already, or keeps
	// it (and frees it with the last topic).
	dds_entity_t tp = dds_create_topic_sertype(pp, name, &t, NULL, NULL, NULL);
	if (tp < 0) {
		ddsi_sertype_fini(t);
		free(t);
		return tp;
	}
	*st = t;
	return tp;
}

hlr_cd_ros2_writer *hlr_cd_ros2_writer_new(dds_entity_t pp, const char *name, const char *type_name, int reliable, int depth, dds_return_t *rc) {
	struct ddsi_sertype *st;
	dds_entity_t t = ros_topic(pp, name, type_name, &st);
	if (t < 0) {
		*rc = t;
		return NULL;
	}
	dds_qos_t *q = ros_qos(reliable, depth);
	dds_entity_t w = dds_create_writer(pp, t, q, NULL);
	dds_delete_qos(q);
	if (w < 0) {
		*rc = w;
		return NULL;
	}
	hlr_cd_ros2_writer *hw = calloc(1, sizeof *hw);
	hw->w = w;
	hw->st = st;
	*rc = 0;
	return hw;
}

void hlr_cd_ros2_writer_free(hlr_cd_ros2_writer *w) {
	if (!w)
		return;
	// A reliable writer delivers its last samples before it goes
	// (bounded): deleting it drops what the reader has yet to get.
	dds_wait_for_acks(w->w, DDS_SECS(1));
	dds_delete(w->w);
	free(w);
}

dds_return_t hlr_cd_ros2_write(hlr_cd_ros2_writer *w, uint8_t *buf, uint32_t len, uint32_t stamp_at, int clock) {
	if (stamp_at != HLR_NO_STAMP) {
		if (len < 8 || stamp_at > len - 8)
			return DDS_RETCODE_BAD_PARAMETER;
		int64_t c = ros_now(clock);
		int32_t sec = (int32_t)(c / 1000000000LL);
		uint32_t nsec = (uint32_t)(c % 1000000000LL);
		memcpy(buf + stamp_at, &sec, 4);
		memcpy(buf + stamp_at + 4, &nsec, 4);
	} else if (len < 4) {
		return DDS_RETCODE_BAD_PARAMETER; // no encapsulation header
	}
	struct hlr_sd *d = sd_new(w->st, SDK_DATA, len);
	if (!d)
		return DDS_RETCODE_OUT_OF_RESOURCES;
	memcpy(d->data, buf, len);
	d->c.statusinfo = 0;
	d->c.timestamp.v = dds_time();
	return dds_writecdr(w->w, &d->c); // takes the serdata's reference
}

hlr_cd_reader *hlr_cd_ros2_reader_new(dds_entity_t pp, const char *name, const char *type_name, int reliable, int depth, int spin, dds_return_t *rc) {
	struct ddsi_sertype *st;
	dds_entity_t t = ros_topic(pp, name, type_name, &st);
	if (t < 0) {
		*rc = t;
		return NULL;
	}
	dds_qos_t *q = ros_qos(reliable, depth);
	hlr_cd_reader *r = hlr_cd_reader_on(pp, t, q, spin, rc);
	dds_delete_qos(q);
	if (r)
		r->opaque = 1;
	return r;
}

int hlr_cd_take_opaque(hlr_cd_reader *r) {
	for (;;) {
		struct ddsi_serdata *sd = NULL;
		dds_sample_info_t info;
		int n = dds_takecdr(r->rd, &sd, 1, &info, DDS_ANY_STATE);
		if (n <= 0)
			return n;
		if (!info.valid_data) {
			ddsi_serdata_unref(sd);
			continue;
		}
		struct hlr_sd *d = (struct hlr_sd *)sd;
		r->sample = sd;
		r->loaned = 1;
		r->data = d->data;
		r->len = d->size;
		r->recv = ros_now(CLOCK_MONOTONIC);
		return 1;
	}
}

void hlr_cd_release_opaque(hlr_cd_reader *r) { ddsi_serdata_unref((struct ddsi_serdata *)r->sample); }
