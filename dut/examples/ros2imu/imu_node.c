// imu_node: the example device under test on Cyclone DDS (issue 34 (b)),
// standing in for a ROS 2 node at the wire. It uses Cyclone the ordinary
// way — the C types `idlc -t` generates from ros2/rosmsg/idl/shipped.idl,
// Cyclone's own serializer, nothing of hilrig's — with ROS 2's names:
//
//   in:  rt/<HILRIG_IMU_TOPIC>  sensor_msgs::msg::dds_::Imu_
//        sensor_data QoS (best effort, keep-last 5, volatile)
//   out: rt/<HILRIG_CMD_TOPIC>  geometry_msgs::msg::dds_::TwistStamped_
//        default QoS (reliable, keep-last 10, volatile)
//
// Per Imu it computes a rate damper (angular.z = -K·ω_z, linear.x from
// the forward acceleration) and publishes a TwistStamped whose
// header.stamp is the Imu's header.stamp copied through: the rig's echo
// correlation reads it back (docs/dut.md). Twist itself has no header,
// hence TwistStamped.
//
// Environment (the rig's, docs/dut.md): HILRIG_DDS_DOMAIN (the DDS domain
// id, default 0), HILRIG_IMU_TOPIC and HILRIG_CMD_TOPIC (ROS 2 names,
// default "imu" and "cmd_vel"). Without CYCLONEDDS_URI the participant is
// confined as every DDS of the rig: loopback only, no multicast, unicast
// discovery to 127.0.0.1. It runs until killed.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dds/dds.h"
#include "shipped.h"

static const char confined[] =
    "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface name=\"lo\" multicast=\"false\"/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General>"
    "<Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>30</MaxAutoParticipantIndex>"
    "<Peers><Peer address=\"127.0.0.1\"/></Peers></Discovery></Domain></CycloneDDS>";

static void die(const char *what, int rc) {
	fprintf(stderr, "imu_node: %s: %s\n", what, rc < 0 ? dds_strretcode(rc) : "failed");
	exit(1);
}

static const char *env_or(const char *name, const char *def) {
	const char *v = getenv(name);
	return v && *v ? v : def;
}

// The control law: a damper on the yaw rate, and forward speed from the
// forward acceleration. Trivial on purpose; the rig times the loop.
static void control(const sensor_msgs_msg_dds__Imu_ *in, geometry_msgs_msg_dds__TwistStamped_ *out) {
	const double k_yaw = 0.8, k_fwd = 0.05;
	out->header.stamp = in->header.stamp; // the echo the rig correlates by
	out->twist.angular.z = -k_yaw * in->angular_velocity.z;
	out->twist.linear.x = k_fwd * in->linear_acceleration.x;
}

int main(void) {
	char *end;
	unsigned long domain = strtoul(env_or("HILRIG_DDS_DOMAIN", "0"), &end, 10);
	if (*end || domain > 232) {
		fprintf(stderr, "imu_node: HILRIG_DDS_DOMAIN=%s: want 0..232\n", getenv("HILRIG_DDS_DOMAIN"));
		return 2;
	}
	char in_topic[128], out_topic[128];
	snprintf(in_topic, sizeof in_topic, "rt/%s", env_or("HILRIG_IMU_TOPIC", "imu"));
	snprintf(out_topic, sizeof out_topic, "rt/%s", env_or("HILRIG_CMD_TOPIC", "cmd_vel"));

	if (!getenv("CYCLONEDDS_URI")) {
		dds_entity_t dom = dds_create_domain((dds_domainid_t)domain, confined);
		if (dom < 0)
			die("create domain", dom);
	}
	dds_entity_t pp = dds_create_participant((dds_domainid_t)domain, NULL, NULL);
	if (pp < 0)
		die("create participant", pp);
	dds_entity_t ti = dds_create_topic(pp, &sensor_msgs_msg_dds__Imu__desc, in_topic, NULL, NULL);
	if (ti < 0)
		die("create topic rt/imu", ti);
	dds_entity_t to = dds_create_topic(pp, &geometry_msgs_msg_dds__TwistStamped__desc, out_topic, NULL, NULL);
	if (to < 0)
		die("create topic rt/cmd_vel", to);

	// ROS 2's sensor_data profile on the input, its default on the output.
	dds_qos_t *q = dds_create_qos();
	dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
	dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 5);
	dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
	dds_entity_t rd = dds_create_reader(pp, ti, q, NULL);
	dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
	dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
	dds_entity_t wr = dds_create_writer(pp, to, q, NULL);
	dds_delete_qos(q);
	if (rd < 0)
		die("create reader", rd);
	if (wr < 0)
		die("create writer", wr);

	dds_entity_t ws = dds_create_waitset(pp);
	dds_entity_t cond = dds_create_readcondition(rd, DDS_ANY_STATE);
	dds_return_t rc;
	if ((rc = dds_waitset_attach(ws, cond, 0)) < 0)
		die("attach", rc);
	printf("imu_node: %s -> %s on domain %lu\n", in_topic, out_topic, domain);
	fflush(stdout);

	sensor_msgs_msg_dds__Imu_ imu;
	memset(&imu, 0, sizeof imu);
	void *samples[1] = {&imu};
	dds_sample_info_t info;
	geometry_msgs_msg_dds__TwistStamped_ cmd;
	memset(&cmd, 0, sizeof cmd);
	char frame[] = "base_link";
	cmd.header.frame_id = frame;
	for (;;) {
		if ((rc = dds_waitset_wait(ws, NULL, 0, DDS_INFINITY)) < 0)
			die("wait", rc);
		int n;
		// Take one at a time into the same sample (Cyclone reuses
		// imu.header.frame_id's buffer), answer each in order.
		while ((n = dds_take(rd, samples, &info, 1, 1)) > 0) {
			if (!info.valid_data)
				continue;
			control(&imu, &cmd);
			if ((rc = dds_write(wr, &cmd)) < 0)
				die("write", rc);
		}
		if (n < 0)
			die("take", n);
	}
}
