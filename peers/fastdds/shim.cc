//go:build fastdds

#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/attributes/LibrarySettingsAttributes.h>
#include <fastrtps/utils/IPLocator.h>
#include <fastrtps/xmlparser/XMLProfileManager.h>

#include "shim.h"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::SerializedPayload_t;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::IPLocator;

static inline int64_t now_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void seterr(char *err, int errlen, const std::string &s) {
	if (errlen > 0) {
		std::strncpy(err, s.c_str(), errlen - 1);
		err[errlen - 1] = 0;
	}
}

// RawMsg is a message of raw bytes: the writer's points at the caller's
// buffer, a reader's owns a buffer of the topic's maximum size.
struct RawMsg {
	uint8_t *buf = nullptr;
	uint32_t len = 0, cap = 0;
	bool own = false;
	~RawMsg() {
		if (own)
			delete[] buf;
	}
};

// BufType is what the two hand-written types (no fastddsgen) share:
// messages are RawMsg buffers of the topic's maximum size, unkeyed; the
// serialized size is the message's plus extra bytes of framing.
class BufType : public TopicDataType {
public:
	BufType(const std::string &name, uint32_t max, uint32_t extra) : max_(max), extra_(extra) {
		setName(name.c_str());
		m_typeSize = max + extra;
		m_isGetKeyDefined = false;
	}
	std::function<uint32_t()> getSerializedSizeProvider(void *data) override {
		uint32_t n = static_cast<RawMsg *>(data)->len + extra_;
		return [n]() { return n; };
	}
	void *createData() override {
		auto *m = new RawMsg;
		m->buf = new uint8_t[max_];
		m->cap = max_;
		m->own = true;
		return m;
	}
	void deleteData(void *data) override { delete static_cast<RawMsg *>(data); }
	bool getKey(void *, InstanceHandle_t *, bool) override { return false; }

protected:
	uint32_t max_, extra_;
};

// RawType is a hand-written TopicDataType for raw bytes: a 4-byte CDR_LE
// encapsulation header, a uint32 length, the bytes. The type name
// carries the maximum size so both ends preallocate alike.
class RawType : public BufType {
public:
	explicit RawType(uint32_t max) : BufType("hlr::Raw" + std::to_string(max), max, 8) {}
	bool serialize(void *data, SerializedPayload_t *p) override {
		auto *m = static_cast<RawMsg *>(data);
		if (m->len > max_ || p->max_size < m->len + 8)
			return false;
		p->data[0] = 0, p->data[1] = 1, p->data[2] = 0, p->data[3] = 0; // CDR_LE
		std::memcpy(p->data + 4, &m->len, 4);
		std::memcpy(p->data + 8, m->buf, m->len);
		p->length = m->len + 8;
		p->encapsulation = CDR_LE;
		return true;
	}
	bool deserialize(SerializedPayload_t *p, void *data) override {
		auto *m = static_cast<RawMsg *>(data);
		uint32_t n;
		if (p->length < 8)
			return false;
		std::memcpy(&n, p->data + 4, 4);
		if (n > m->cap || n + 8 > p->length)
			return false;
		std::memcpy(m->buf, p->data + 8, n);
		m->len = n;
		return true;
	}
};

struct hlr_fd_peer {
	DomainParticipant *pp = nullptr;
	Publisher *pub = nullptr;
	Subscriber *sub = nullptr;
	std::mutex mu;
	std::map<std::string, Topic *> topics;
};

struct hlr_fd_writer {
	DataWriter *w;
	bool ros = false;
	RawMsg msg; // points at the caller's buffer
};

struct reader_impl {
	DataReader *r;
	RawMsg *msg;
	TypeSupport type;
};

// reader_on opens a reader on t with QoS q, its message buffer from the
// topic's type.
static hlr_fd_reader *reader_on(hlr_fd_peer *p, Topic *t, DataReaderQos &q, const char *name, int spin, char *err, int errlen) {
	q.reliable_reader_qos().times.heartbeatResponseDelay = eprosima::fastrtps::Duration_t(0, 0);
	DataReader *r = p->sub->create_datareader(t, q);
	if (!r) {
		seterr(err, errlen, std::string("create_datareader on ") + name + " failed");
		return nullptr;
	}
	auto *impl = new reader_impl;
	impl->r = r;
	impl->type = p->pp->find_type(t->get_type_name());
	impl->msg = static_cast<RawMsg *>(impl->type->createData());
	auto *hr = new hlr_fd_reader{};
	hr->impl = impl;
	hr->spin = spin;
	return hr;
}

hlr_fd_peer *hlr_fd_open(uint32_t domain, int transport, uint32_t shm_segment, const char *addr, const char **peers, int npeers, char *err, int errlen) {
	std::string local = addr ? addr : "127.0.0.1";
	DomainParticipantQos q = PARTICIPANT_QOS_DEFAULT;
	q.name("hilrig");
	// Confined: no builtin transports (they would add UDP on every
	// interface and multicast discovery); only the one transport of the
	// case, on loopback for UDP; unicast-only discovery to 127.0.0.1.
	q.transport().use_builtin_transports = false;
	if (transport == 1 || transport == 2) {
		// Fast DDS's own default pair, as ROS 2 runs it: SHM for the data
		// between participants on one host (preferred over UDP when both
		// ends have it), UDPv4 beside it (the interface whitelist keeps
		// its user locators on the one address too); transport 2 is SHM
		// alone, discovery included, for boards without a shared network.
		auto shm = std::make_shared<eprosima::fastdds::rtps::SharedMemTransportDescriptor>();
		shm->segment_size(shm_segment);
		q.transport().user_transports.push_back(shm);
	}
	if (transport != 2) {
		auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
		udp->interfaceWhiteList.push_back(local);
		udp->sendBufferSize = 4 << 20;
		udp->receiveBufferSize = 4 << 20;
		// Unicast discovery reaches the participant ids 0..range-1 of every
		// initial peer (each id has its own well-known port). Fast DDS 2.9
		// numbers a process's participants from a counter that never goes
		// back, so an agent that opens a participant per endpoint
		// (Start.ColdPeer) passes id 20 after twenty of them, and a peer
		// beyond the range is never discovered (measured: the agent test
		// binary's 21st participant matched nothing). 100 covers a suite
		// process's cold starts; ids stay below 120, where domain 0's ports
		// would run into domain 1's.
		udp->maxInitialPeersRange = 100;
		q.transport().user_transports.push_back(udp);
		Locator_t meta;
		IPLocator::setIPv4(meta, local);
		meta.port = 0; // well-known port of this participant id
		q.wire_protocol().builtin.metatrafficUnicastLocatorList.push_back(meta);
		std::vector<std::string> ps;
		for (int i = 0; i < npeers; i++)
			ps.push_back(peers[i]);
		if (ps.empty())
			ps.push_back("127.0.0.1");
		if (addr)
			ps.push_back(local);
		for (auto &a : ps) {
			Locator_t peer;
			IPLocator::setIPv4(peer, a);
			q.wire_protocol().builtin.initialPeersList.push_back(peer);
		}
		q.transport().send_socket_buffer_size = 4 << 20;
		q.transport().listen_socket_buffer_size = 4 << 20;
	}
	// Intraprocess delivery off (Fast DDS 2.9 defaults to FULL): a writer
	// and a reader in one process (one agent running both ends on one
	// board) then exchange samples over the configured transport, as
	// between processes, instead of by a direct call. Between processes
	// Fast DDS never delivers intraprocess anyway.
	eprosima::fastrtps::LibrarySettingsAttributes ls;
	ls.intraprocess_delivery = eprosima::fastrtps::INTRAPROCESS_OFF;
	eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings(ls);
	auto *p = new hlr_fd_peer;
	p->pp = DomainParticipantFactory::get_instance()->create_participant(domain, q);
	if (!p->pp) {
		delete p;
		seterr(err, errlen, "create_participant failed");
		return nullptr;
	}
	p->pub = p->pp->create_publisher(PUBLISHER_QOS_DEFAULT);
	p->sub = p->pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
	if (!p->pub || !p->sub) {
		hlr_fd_close(p);
		seterr(err, errlen, "create_publisher/create_subscriber failed");
		return nullptr;
	}
	return p;
}

void hlr_fd_close(hlr_fd_peer *p) {
	if (!p)
		return;
	p->pp->delete_contained_entities();
	DomainParticipantFactory::get_instance()->delete_participant(p->pp);
	delete p;
}

static Topic *topic_of(hlr_fd_peer *p, const char *name, TopicDataType *type, char *err, int errlen) {
	std::lock_guard<std::mutex> l(p->mu);
	auto it = p->topics.find(name);
	if (it != p->topics.end()) {
		delete type;
		return it->second;
	}
	TypeSupport t(type);
	if (t.register_type(p->pp) != ReturnCode_t::RETCODE_OK && !p->pp->find_type(t.get_type_name())) {
		seterr(err, errlen, "register_type failed");
		return nullptr;
	}
	Topic *tp = p->pp->create_topic(name, t.get_type_name(), TOPIC_QOS_DEFAULT);
	if (!tp) {
		seterr(err, errlen, std::string("create_topic ") + name + " failed (a topic of another max_payload?)");
		return nullptr;
	}
	p->topics[name] = tp;
	return tp;
}

static Topic *topic(hlr_fd_peer *p, const char *name, uint32_t max, char *err, int errlen) {
	return topic_of(p, name, new RawType(max), err, errlen);
}

// The QoS mapping (docs/peers.md), as for Cyclone: reliable = KEEP_ALL
// bounded by depth samples (a slow reader blocks the writer), best effort
// = KEEP_LAST depth. Data sharing off: the transport of the case carries
// every sample. Synchronous publish mode (the default; the lowest latency
// per Fast DDS's guide), preallocated-with-realloc history memory.
template <class Q>
static void qos(Q &q, int reliable, int depth) {
	if (depth < 1)
		depth = 1;
	if (reliable) {
		q.reliability().kind = RELIABLE_RELIABILITY_QOS;
		q.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(10, 0);
		q.history().kind = KEEP_ALL_HISTORY_QOS;
		q.resource_limits().max_samples = depth;
		q.resource_limits().max_instances = 1;
		q.resource_limits().max_samples_per_instance = depth;
		q.resource_limits().allocated_samples = depth;
	} else {
		q.reliability().kind = BEST_EFFORT_RELIABILITY_QOS;
		q.history().kind = KEEP_LAST_HISTORY_QOS;
		q.history().depth = depth;
	}
	// Reliable is TRANSIENT_LOCAL: a reader that matches the writer a
	// moment after the writer matched it (discovery is per side) still
	// gets the samples already written (the suite lost the first sample
	// of a reliable flow with VOLATILE). Best effort stays VOLATILE.
	q.durability().kind = reliable ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
	q.data_sharing().off();
	q.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
}

// writer_on opens a writer on t with QoS q (its reliability, history
// and durability set), tuned alike for the raw and the ROS 2 topics.
static hlr_fd_writer *writer_on(hlr_fd_peer *p, Topic *t, DataWriterQos &q, uint32_t max, const char *name, char *err, int errlen) {
	if (max > 65000) // fragmented samples need the asynchronous mode in 2.9
		q.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
	// Repair and acknowledgement fast (Fast DDS's guide: a shorter
	// heartbeat period lowers the latency of recovering a lost sample; the
	// 3 s default stalls a KEEP_ALL writer whose history is full).
	q.reliable_writer_qos().times.heartbeatPeriod = eprosima::fastrtps::Duration_t(0, 10 * 1000 * 1000);
	q.reliable_writer_qos().times.nackResponseDelay = eprosima::fastrtps::Duration_t(0, 0);
	DataWriter *w = p->pub->create_datawriter(t, q);
	if (!w) {
		seterr(err, errlen, std::string("create_datawriter on ") + name + " failed");
		return nullptr;
	}
	auto *hw = new hlr_fd_writer;
	hw->w = w;
	return hw;
}

hlr_fd_writer *hlr_fd_writer_new(hlr_fd_peer *p, const char *name, int reliable, int depth, uint32_t max, char *err, int errlen) {
	Topic *t = topic(p, name, max, err, errlen);
	if (!t)
		return nullptr;
	DataWriterQos q = DATAWRITER_QOS_DEFAULT;
	qos(q, reliable, depth);
	return writer_on(p, t, q, max, name, err, errlen);
}

void hlr_fd_writer_free(hlr_fd_peer *p, hlr_fd_writer *w) {
	if (w->ros) // a reliable ROS 2 writer delivers its last samples first (bounded)
		w->w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(1, 0));
	p->pub->delete_datawriter(w->w);
	delete w;
}

int hlr_fd_matched(hlr_fd_writer *w) {
	PublicationMatchedStatus st;
	if (w->w->get_publication_matched_status(st) != ReturnCode_t::RETCODE_OK)
		return -1;
	return st.current_count;
}

// write_msg writes w->msg: 0, 1 = timeout, 2 = other error.
static int write_msg(hlr_fd_writer *w) {
	ReturnCode_t rc = w->w->write(&w->msg, HANDLE_NIL);
	if (rc == ReturnCode_t::RETCODE_OK)
		return 0;
	if (rc == ReturnCode_t::RETCODE_TIMEOUT)
		return 1;
	return 2;
}

int hlr_fd_write(hlr_fd_writer *w, uint8_t *buf, uint32_t len, uint64_t seq, int clock) {
	w->msg.buf = buf;
	w->msg.len = len;
	std::memcpy(buf, &seq, 8);
	int64_t mono = now_ns(CLOCK_MONOTONIC), c = now_ns(clock);
	std::memcpy(buf + 8, &mono, 8);
	std::memcpy(buf + 16, &c, 8);
	return write_msg(w);
}

hlr_fd_reader *hlr_fd_reader_new(hlr_fd_peer *p, const char *name, int reliable, int depth, uint32_t max, int spin, char *err, int errlen) {
	Topic *t = topic(p, name, max, err, errlen);
	if (!t)
		return nullptr;
	DataReaderQos q = DATAREADER_QOS_DEFAULT;
	qos(q, reliable, depth);
	// A reliable reader keeps all without a bound: with its cache bounded
	// by depth, 2.9's SHM transport stalls the writer for good once the
	// cache fills (conformance test, reliable case). The writer's KEEP_ALL
	// history, bounded by depth, still blocks it until acknowledged.
	if (reliable)
		q.resource_limits() = ResourceLimitsQosPolicy();
	return reader_on(p, t, q, name, spin, err, errlen);
}

void hlr_fd_reader_free(hlr_fd_peer *p, hlr_fd_reader *hr) {
	auto *impl = static_cast<reader_impl *>(hr->impl);
	p->sub->delete_datareader(impl->r);
	impl->type->deleteData(impl->msg);
	delete impl;
	delete hr;
}

// take_one takes one sample, stamping its receipt once the reader holds
// it and before take_next_sample deserialises (copies) it — the first
// line of an on_data_available callback. (A stamp taken before knowing a
// sample is there could precede its arrival.)
static int take_one(hlr_fd_reader *hr) {
	auto *impl = static_cast<reader_impl *>(hr->impl);
	for (;;) {
		if (impl->r->get_unread_count() == 0)
			return 0;
		int64_t stamp = now_ns(CLOCK_MONOTONIC);
		SampleInfo info;
		ReturnCode_t rc = impl->r->take_next_sample(impl->msg, &info);
		if (rc == ReturnCode_t::RETCODE_NO_DATA)
			return 0;
		if (rc != ReturnCode_t::RETCODE_OK)
			return -1;
		if (!info.valid_data)
			continue;
		hr->data = impl->msg->buf;
		hr->len = impl->msg->len;
		hr->recv = stamp;
		return 1;
	}
}

int hlr_fd_take(hlr_fd_reader *hr, int64_t timeout_ns) {
	auto *impl = static_cast<reader_impl *>(hr->impl);
	int64_t deadline = now_ns(CLOCK_MONOTONIC) + timeout_ns;
	if (hr->spin) {
		for (;;) {
			int n = take_one(hr);
			if (n != 0 || now_ns(CLOCK_MONOTONIC) > deadline)
				return n;
		}
	}
	int n = take_one(hr);
	if (n != 0)
		return n;
	eprosima::fastrtps::Duration_t to((int32_t)(timeout_ns / 1000000000LL), (uint32_t)(timeout_ns % 1000000000LL));
	if (!impl->r->wait_for_unread_message(to))
		return 0;
	return take_one(hr);
}

int hlr_fd_reader_matched(hlr_fd_reader *hr) {
	SubscriptionMatchedStatus st;
	if (static_cast<reader_impl *>(hr->impl)->r->get_subscription_matched_status(st) != ReturnCode_t::RETCODE_OK)
		return -1;
	return st.current_count;
}

// ROS 2 topics (issue 33). OpaqueType carries a ROS 2 message's XCDR1
// bytes as they are (encapsulation header included) under the ROS type
// name ("sensor_msgs::msg::dds_::Imu_"): unkeyed, and with no type object
// or type information (auto-fill off; the type has none to give), so
// endpoints match by type name only — a Fast DDS 3 (Kilted) peer that
// sends type information has nothing of ours to refuse.
class OpaqueType : public BufType {
public:
	OpaqueType(const char *name, uint32_t max) : BufType(name, max, 0) {
		auto_fill_type_object(false);
		auto_fill_type_information(false);
	}
	bool serialize(void *data, SerializedPayload_t *p) override {
		auto *m = static_cast<RawMsg *>(data);
		if (m->len < 4 || m->len > max_ || p->max_size < m->len)
			return false;
		std::memcpy(p->data, m->buf, m->len);
		p->length = m->len;
		p->encapsulation = m->buf[1] == 1 ? CDR_LE : CDR_BE;
		return true;
	}
	bool deserialize(SerializedPayload_t *p, void *data) override {
		auto *m = static_cast<RawMsg *>(data);
		if (p->length > m->cap)
			return false;
		std::memcpy(m->buf, p->data, p->length);
		m->len = p->length;
		return true;
	}
};

// The ROS 2 QoS profiles: reliability as given, keep-last depth,
// volatile; data sharing off as for the raw topics.
template <class Q>
static void ros_qos(Q &q, int reliable, int depth) {
	if (depth < 1)
		depth = 1;
	q.reliability().kind = reliable ? RELIABLE_RELIABILITY_QOS : BEST_EFFORT_RELIABILITY_QOS;
	q.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(0, 100 * 1000 * 1000);
	q.history().kind = KEEP_LAST_HISTORY_QOS;
	q.history().depth = depth;
	q.durability().kind = VOLATILE_DURABILITY_QOS;
	q.data_sharing().off();
	q.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
}

hlr_fd_writer *hlr_fd_ros2_writer_new(hlr_fd_peer *p, const char *name, const char *type_name, int reliable, int depth, uint32_t max, char *err, int errlen) {
	Topic *t = topic_of(p, name, new OpaqueType(type_name, max), err, errlen);
	if (!t)
		return nullptr;
	DataWriterQos q = DATAWRITER_QOS_DEFAULT;
	ros_qos(q, reliable, depth);
	q.representation().m_value.clear();
	q.representation().m_value.push_back(XCDR_DATA_REPRESENTATION); // XCDR1, as ROS 2
	hlr_fd_writer *hw = writer_on(p, t, q, max, name, err, errlen);
	if (hw)
		hw->ros = true;
	return hw;
}

int hlr_fd_ros2_write(hlr_fd_writer *w, uint8_t *buf, uint32_t len, uint32_t stamp_at, int clock) {
	w->msg.buf = buf;
	w->msg.len = len;
	if (stamp_at == HLR_NO_STAMP)
		return len < 4 ? 2 : write_msg(w); // forwarded as it is
	if (len < 8 || stamp_at > len - 8)
		return 2;
	int64_t c = now_ns(clock);
	int32_t sec = (int32_t)(c / 1000000000LL);
	uint32_t nsec = (uint32_t)(c % 1000000000LL);
	std::memcpy(buf + stamp_at, &sec, 4);
	std::memcpy(buf + stamp_at + 4, &nsec, 4);
	return write_msg(w);
}

hlr_fd_reader *hlr_fd_ros2_reader_new(hlr_fd_peer *p, const char *name, const char *type_name, int reliable, int depth, uint32_t max, int spin, char *err, int errlen) {
	Topic *t = topic_of(p, name, new OpaqueType(type_name, max), err, errlen);
	if (!t)
		return nullptr;
	DataReaderQos q = DATAREADER_QOS_DEFAULT;
	ros_qos(q, reliable, depth);
	return reader_on(p, t, q, name, spin, err, errlen);
}
