// ros2check: an independent ROS 2 endpoint for hilrig's tests (issue 33,
// scope 4a), through Fast DDS. It uses the C++ types and TopicDataTypes
// Debian's fastddsgen generates (without -typeobject: no type object)
// from ros2/rosmsg/idl/shipped.idl — Fast CDR's serializer, nothing of
// hilrig's codec — with ROS 2's names and default QoS, and prints every
// field of what it reads or writes as JSON in rosmsg's JSON form. Built
// and run by peers/fastdds's TestROS2IndependentFastDDS. Confined as the
// adapter is: UDPv4 on 127.0.0.1 only, builtin transports off, unicast
// discovery to 127.0.0.1, no multicast.
//
//   ros2check DOMAIN read  imu|image TOPIC
//   ros2check DOMAIN write imu|image TOPIC   (writes after a line on stdin)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/log/Log.hpp>
#include <fastdds/dds/log/StdoutErrConsumer.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include "shippedPubSubTypes.h"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::IPLocator;
using eprosima::fastrtps::rtps::Locator_t;
using sensor_msgs::msg::dds_::Image_;
using sensor_msgs::msg::dds_::Imu_;

static void die(const std::string &what) {
	std::fprintf(stderr, "ros2check: %s failed\n", what.c_str());
	std::exit(1);
}

static void str(const std::string &s) {
	std::putchar('"');
	for (char c : s) {
		if (c == '"' || c == '\\')
			std::putchar('\\');
		std::putchar(c);
	}
	std::putchar('"');
}

static void header(const std_msgs::msg::dds_::Header_ &h) {
	std::printf("\"header\":{\"stamp\":{\"sec\":%d,\"nanosec\":%u},\"frame_id\":", h.stamp().sec(), h.stamp().nanosec());
	str(h.frame_id());
	std::putchar('}');
}

static void vec(const char *name, const geometry_msgs::msg::dds_::Vector3_ &v) {
	std::printf("\"%s\":{\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}", name, v.x(), v.y(), v.z());
}

static void cov(const char *name, const std::array<double, 9> &c) {
	std::printf("\"%s\":[", name);
	for (int i = 0; i < 9; i++)
		std::printf("%s%.17g", i ? "," : "", c[i]);
	std::putchar(']');
}

static void print(const Imu_ &m) {
	std::putchar('{');
	header(m.header());
	const auto &o = m.orientation();
	std::printf(",\"orientation\":{\"x\":%.17g,\"y\":%.17g,\"z\":%.17g,\"w\":%.17g},", o.x(), o.y(), o.z(), o.w());
	cov("orientation_covariance", m.orientation_covariance());
	std::putchar(',');
	vec("angular_velocity", m.angular_velocity());
	std::putchar(',');
	cov("angular_velocity_covariance", m.angular_velocity_covariance());
	std::putchar(',');
	vec("linear_acceleration", m.linear_acceleration());
	std::putchar(',');
	cov("linear_acceleration_covariance", m.linear_acceleration_covariance());
	std::printf("}\n");
}

static void print(const Image_ &m) {
	std::putchar('{');
	header(m.header());
	std::printf(",\"height\":%u,\"width\":%u,\"encoding\":", m.height(), m.width());
	str(m.encoding());
	std::printf(",\"is_bigendian\":%u,\"step\":%u,\"data\":[", m.is_bigendian(), m.step());
	for (size_t i = 0; i < m.data().size(); i++)
		std::printf("%s%u", i ? "," : "", m.data()[i]);
	std::printf("]}\n");
}

// fill sets every field to a value of its own, so a field read from the
// wrong offset shows.
static void fill(Imu_ &m) {
	m.header().stamp().sec(1700000007);
	m.header().stamp().nanosec(123456789);
	m.header().frame_id("cpp_imu");
	m.orientation().x(0.125), m.orientation().y(-0.25), m.orientation().z(0.5), m.orientation().w(0.8125);
	for (int i = 0; i < 9; i++) {
		m.orientation_covariance()[i] = 1.0 + i;
		m.angular_velocity_covariance()[i] = -2.0 * i;
		m.linear_acceleration_covariance()[i] = 0.001 * (i + 1);
	}
	m.angular_velocity().x(1e-3), m.angular_velocity().y(-2e-3), m.angular_velocity().z(3.5);
	m.linear_acceleration().x(0.1), m.linear_acceleration().y(-9.80665), m.linear_acceleration().z(1e300);
}

static void fill(Image_ &m) {
	m.header().stamp().sec(-5);
	m.header().stamp().nanosec(999999999);
	m.header().frame_id("camera_optical_frame");
	m.height(7), m.width(111);
	m.encoding("mono8");
	m.is_bigendian(1);
	m.step(111);
	m.data().resize(777);
	for (size_t i = 0; i < m.data().size(); i++)
		m.data()[i] = (uint8_t)(i * 7 + 3);
}

// await_match polls matched() every millisecond until it is not 0 (20 s
// at most), then says so on stdout: "matched".
template <class F>
static void await_match(F matched) {
	for (int i = 0; matched() == 0; i++) {
		if (i > 20000)
			die("waiting for a match");
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	std::printf("matched\n");
	std::fflush(stdout);
}

template <class T, class PubSub>
static int run(DomainParticipant *pp, bool writing, const char *topic_name) {
	TypeSupport type(new PubSub());
	if (type.register_type(pp) != ReturnCode_t::RETCODE_OK)
		die("register_type");
	Topic *topic = pp->create_topic(topic_name, type.get_type_name(), TOPIC_QOS_DEFAULT);
	if (!topic)
		die("create_topic");
	auto qos = [](auto &q) { // ROS 2's default profile
		q.reliability().kind = RELIABLE_RELIABILITY_QOS;
		q.history().kind = KEEP_LAST_HISTORY_QOS;
		q.history().depth = 10;
		q.durability().kind = VOLATILE_DURABILITY_QOS;
	};
	T m;
	if (writing) {
		DataWriterQos q = DATAWRITER_QOS_DEFAULT;
		qos(q);
		DataWriter *w = pp->create_publisher(PUBLISHER_QOS_DEFAULT)->create_datawriter(topic, q);
		if (!w)
			die("create_datawriter");
		await_match([w] {
			PublicationMatchedStatus st;
			w->get_publication_matched_status(st);
			return st.current_count;
		});
		std::string line;
		if (!std::getline(std::cin, line))
			die("stdin");
		fill(m);
		if (!w->write(&m))
			die("write");
		print(m);
		std::fflush(stdout);
		w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(5, 0));
		return 0;
	}
	DataReaderQos q = DATAREADER_QOS_DEFAULT;
	qos(q);
	DataReader *r = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT)->create_datareader(topic, q);
	if (!r)
		die("create_datareader");
	await_match([r] {
		SubscriptionMatchedStatus st;
		r->get_subscription_matched_status(st);
		return st.current_count;
	});
	SampleInfo info;
	for (;;) {
		if (!r->wait_for_unread_message(eprosima::fastrtps::Duration_t(20, 0)))
			die("waiting for a sample");
		if (r->take_next_sample(&m, &info) == ReturnCode_t::RETCODE_OK && info.valid_data)
			break;
	}
	print(m);
	std::fflush(stdout);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		std::fprintf(stderr, "usage: ros2check DOMAIN read|write imu|image TOPIC\n");
		return 2;
	}
	// Fast DDS logs to stdout by default: warnings and errors go to
	// stderr instead, stdout carries only the protocol lines.
	Log::ClearConsumers();
	Log::RegisterConsumer(std::unique_ptr<LogConsumer>(new StdoutErrConsumer));
	uint32_t domain = (uint32_t)std::strtoul(argv[1], nullptr, 10);
	bool writing = std::strcmp(argv[2], "write") == 0, imu = std::strcmp(argv[3], "imu") == 0;
	DomainParticipantQos q = PARTICIPANT_QOS_DEFAULT;
	q.name("ros2check");
	q.transport().use_builtin_transports = false;
	auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
	udp->interfaceWhiteList.push_back("127.0.0.1");
	udp->maxInitialPeersRange = 100;
	q.transport().user_transports.push_back(udp);
	Locator_t meta, peer;
	IPLocator::setIPv4(meta, "127.0.0.1");
	meta.port = 0;
	q.wire_protocol().builtin.metatrafficUnicastLocatorList.push_back(meta);
	IPLocator::setIPv4(peer, "127.0.0.1");
	q.wire_protocol().builtin.initialPeersList.push_back(peer);
	DomainParticipant *pp = DomainParticipantFactory::get_instance()->create_participant(domain, q);
	if (!pp)
		die("create_participant");
	int rc = imu ? run<Imu_, sensor_msgs::msg::dds_::Imu_PubSubType>(pp, writing, argv[4])
	             : run<Image_, sensor_msgs::msg::dds_::Image_PubSubType>(pp, writing, argv[4]);
	pp->delete_contained_entities();
	DomainParticipantFactory::get_instance()->delete_participant(pp);
	return rc;
}
