// ros2check: an independent ROS 2 endpoint for hilrig's tests (issue 33,
// scope 4a). It uses Cyclone DDS the ordinary way — the C types and topic
// descriptors `idlc -t` generates from ros2/rosmsg/idl/shipped.idl (no
// type information), Cyclone's own serializer — with ROS 2's names and
// default QoS, and prints every field of what it reads or writes as JSON
// in rosmsg's JSON form. Built and run by peers/cyclonedds's
// TestROS2IndependentCyclone; confined by the CYCLONEDDS_URI it is given.
//
//   ros2check DOMAIN read  imu|image TOPIC   wait for a match, print "matched",
//                                           print the first sample read
//   ros2check DOMAIN write imu|image TOPIC   wait for a match, print "matched",
//                                           wait for a line on stdin, write
//                                           one sample and print it
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dds/dds.h"
#include "shipped.h"

static void die(const char *what, int rc) {
	fprintf(stderr, "ros2check: %s: %s\n", what, rc < 0 ? dds_strretcode(rc) : "failed");
	exit(1);
}

static void print_string(const char *s) {
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

static void print_header(const std_msgs_msg_dds__Header_ *h) {
	printf("\"header\":{\"stamp\":{\"sec\":%" PRId32 ",\"nanosec\":%" PRIu32 "},\"frame_id\":", h->stamp.sec, h->stamp.nanosec);
	print_string(h->frame_id);
	putchar('}');
}

static void print_vec(const char *name, double x, double y, double z) {
	printf("\"%s\":{\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}", name, x, y, z);
}

static void print_cov(const char *name, const double *c) {
	printf("\"%s\":[", name);
	for (int i = 0; i < 9; i++)
		printf("%s%.17g", i ? "," : "", c[i]);
	putchar(']');
}

static void print_imu(const sensor_msgs_msg_dds__Imu_ *m) {
	putchar('{');
	print_header(&m->header);
	printf(",\"orientation\":{\"x\":%.17g,\"y\":%.17g,\"z\":%.17g,\"w\":%.17g},", m->orientation.x, m->orientation.y, m->orientation.z, m->orientation.w);
	print_cov("orientation_covariance", m->orientation_covariance);
	putchar(',');
	print_vec("angular_velocity", m->angular_velocity.x, m->angular_velocity.y, m->angular_velocity.z);
	putchar(',');
	print_cov("angular_velocity_covariance", m->angular_velocity_covariance);
	putchar(',');
	print_vec("linear_acceleration", m->linear_acceleration.x, m->linear_acceleration.y, m->linear_acceleration.z);
	putchar(',');
	print_cov("linear_acceleration_covariance", m->linear_acceleration_covariance);
	printf("}\n");
}

static void print_image(const sensor_msgs_msg_dds__Image_ *m) {
	putchar('{');
	print_header(&m->header);
	printf(",\"height\":%" PRIu32 ",\"width\":%" PRIu32 ",\"encoding\":", m->height, m->width);
	print_string(m->encoding);
	printf(",\"is_bigendian\":%u,\"step\":%" PRIu32 ",\"data\":[", m->is_bigendian, m->step);
	for (uint32_t i = 0; i < m->data._length; i++)
		printf("%s%u", i ? "," : "", m->data._buffer[i]);
	printf("]}\n");
}

// fill_* set every field to a value of its own, so a field read from the
// wrong offset shows.
static void fill_imu(sensor_msgs_msg_dds__Imu_ *m) {
	memset(m, 0, sizeof *m);
	m->header.stamp.sec = 1700000007;
	m->header.stamp.nanosec = 123456789;
	m->header.frame_id = "c_imu";
	m->orientation.x = 0.125, m->orientation.y = -0.25, m->orientation.z = 0.5, m->orientation.w = 0.8125;
	for (int i = 0; i < 9; i++) {
		m->orientation_covariance[i] = 1.0 + i;
		m->angular_velocity_covariance[i] = -2.0 * i;
		m->linear_acceleration_covariance[i] = 0.001 * (i + 1);
	}
	m->angular_velocity.x = 1e-3, m->angular_velocity.y = -2e-3, m->angular_velocity.z = 3.5;
	m->linear_acceleration.x = 0.1, m->linear_acceleration.y = -9.80665, m->linear_acceleration.z = 1e300;
}

static uint8_t image_data[777];

static void fill_image(sensor_msgs_msg_dds__Image_ *m) {
	memset(m, 0, sizeof *m);
	m->header.stamp.sec = -5;
	m->header.stamp.nanosec = 999999999;
	m->header.frame_id = "camera_optical_frame";
	m->height = 7, m->width = 111;
	m->encoding = "mono8";
	m->is_bigendian = 1;
	m->step = 111;
	for (size_t i = 0; i < sizeof image_data; i++)
		image_data[i] = (uint8_t)(i * 7 + 3);
	m->data._buffer = image_data;
	m->data._length = m->data._maximum = sizeof image_data;
	m->data._release = false;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: ros2check DOMAIN read|write imu|image TOPIC\n");
		return 2;
	}
	uint32_t domain = (uint32_t)strtoul(argv[1], NULL, 10);
	int writing = strcmp(argv[2], "write") == 0, imu = strcmp(argv[3], "imu") == 0;
	const dds_topic_descriptor_t *desc = imu ? &sensor_msgs_msg_dds__Imu__desc : &sensor_msgs_msg_dds__Image__desc;
	dds_entity_t pp = dds_create_participant(domain, NULL, NULL);
	if (pp < 0)
		die("participant", pp);
	dds_entity_t tp = dds_create_topic(pp, desc, argv[4], NULL, NULL);
	if (tp < 0)
		die("topic", tp);
	// ROS 2's default profile: reliable, keep-last 10, volatile.
	dds_qos_t *q = dds_create_qos();
	dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
	dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
	dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
	dds_entity_t ep = writing ? dds_create_writer(pp, tp, q, NULL) : dds_create_reader(pp, tp, q, NULL);
	dds_delete_qos(q);
	if (ep < 0)
		die(writing ? "writer" : "reader", ep);
	// Matched: the other side exists (the test created it first).
	dds_return_t rc = dds_set_status_mask(ep, writing ? DDS_PUBLICATION_MATCHED_STATUS : DDS_SUBSCRIPTION_MATCHED_STATUS);
	if (rc < 0)
		die("status mask", rc);
	dds_entity_t ws = dds_create_waitset(pp);
	if ((rc = dds_waitset_attach(ws, ep, ep)) < 0)
		die("waitset", rc);
	for (;;) {
		int32_t n;
		if (writing) {
			dds_publication_matched_status_t st;
			dds_get_publication_matched_status(ep, &st);
			n = st.current_count;
		} else {
			dds_subscription_matched_status_t st;
			dds_get_subscription_matched_status(ep, &st);
			n = st.current_count;
		}
		if (n > 0)
			break;
		if ((rc = dds_waitset_wait(ws, NULL, 0, DDS_SECS(20))) <= 0)
			die("waiting for a match", rc == 0 ? DDS_RETCODE_TIMEOUT : rc);
	}
	printf("matched\n");
	fflush(stdout);
	sensor_msgs_msg_dds__Imu_ mi;
	sensor_msgs_msg_dds__Image_ mg;
	if (writing) {
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			die("stdin", 0);
		if (imu)
			fill_imu(&mi);
		else
			fill_image(&mg);
		if ((rc = dds_write(ep, imu ? (void *)&mi : (void *)&mg)) < 0)
			die("write", rc);
		if (imu)
			print_imu(&mi);
		else
			print_image(&mg);
		fflush(stdout);
		dds_wait_for_acks(ep, DDS_SECS(5));
	} else {
		dds_entity_t rws = dds_create_waitset(pp);
		dds_entity_t rc_ = dds_create_readcondition(ep, DDS_ANY_STATE);
		dds_waitset_attach(rws, rc_, 0);
		void *samples[1] = {NULL};
		dds_sample_info_t info;
		for (;;) {
			if ((rc = dds_waitset_wait(rws, NULL, 0, DDS_SECS(20))) <= 0)
				die("waiting for a sample", rc == 0 ? DDS_RETCODE_TIMEOUT : rc);
			samples[0] = NULL;
			int n = dds_take(ep, samples, &info, 1, 1);
			if (n < 0)
				die("take", n);
			if (n == 1 && info.valid_data)
				break;
			if (n == 1)
				dds_return_loan(ep, samples, n);
		}
		if (imu)
			print_imu(samples[0]);
		else
			print_image(samples[0]);
		fflush(stdout);
		dds_return_loan(ep, samples, 1);
	}
	dds_delete(pp);
	return 0;
}
