package ros2mcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// MixOptions shape the sample robot recording of WriteMix.
type MixOptions struct {
	Duration    time.Duration    // of the recording; 0: 10 s
	Start       time.Time        // first log time; zero: 2026-01-01T00:00:00Z (files are reproducible)
	Seed        uint64           // jitter and sensor noise
	Compression mcap.Compression // of the chunks; "" (none) unless set
}

// MixTopic is one stream of the sample recording.
type MixTopic struct {
	Topic  string
	Type   string        // ROS 2 type, pkg/msg/Type
	Period time.Duration // nominal inter-arrival time
	Size   int           // payload bytes (CDR, header included)
}

// MixTopics are the sample recording's streams: a small mobile robot's
// IMU (200 Hz), camera (15 Hz, 160×120 rgb8), 16-ring lidar (10 Hz, 4096
// points) and velocity commands (20 Hz). The replay suite's default load.
var MixTopics = []MixTopic{
	{Topic: "/imu", Type: "sensor_msgs/msg/Imu", Period: 5 * time.Millisecond},
	{Topic: "/camera/image_raw", Type: "sensor_msgs/msg/Image", Period: time.Second / 15},
	{Topic: "/lidar/points", Type: "sensor_msgs/msg/PointCloud2", Period: 100 * time.Millisecond},
	{Topic: "/cmd_vel", Type: "geometry_msgs/msg/Twist", Period: 50 * time.Millisecond},
}

const (
	camW, camH  = 160, 120
	lidarRings  = 16
	lidarPoints = 256 // per ring
	pointStep   = 16  // x, y, z, intensity float32
)

// MixStats counts what WriteMix wrote per topic.
type MixStats struct {
	Messages map[string]int
	Bytes    map[string]int // payload bytes
}

// WriteMix writes the sample recording (MixTopics) to w: ros2 profile,
// ros2msg schemas from the shipped definitions, CDR payloads with
// plausible values, publish times on each topic's period with ±10%
// jitter, log times 50-500 µs later, messages in publish-time order. Same
// options, same bytes.
func WriteMix(w io.Writer, o MixOptions) (MixStats, error) {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	st := MixStats{Messages: map[string]int{}, Bytes: map[string]int{}}
	reg, err := rosmsg.Shipped()
	if err != nil {
		return st, err
	}
	mw, err := mcap.NewWriter(w, mcap.Options{Header: mcap.Header{Profile: Profile, Library: "hilrig ros2mcap.WriteMix"},
		Compression: o.Compression, ChunkSize: 4 << 20})
	if err != nil {
		return st, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6d6978))
	type stream struct {
		MixTopic
		codec *rosmsg.Codec
		next  time.Duration // next publish time, from Start
		seq   uint32
	}
	streams := make([]*stream, len(MixTopics))
	for i, t := range MixTopics {
		id := uint16(i + 1)
		s, err := Schema(reg, id, t.Type)
		if err != nil {
			return st, err
		}
		if err := mw.AddSchema(s); err != nil {
			return st, err
		}
		if err := mw.AddChannel(Channel(id, id, t.Topic, "")); err != nil {
			return st, err
		}
		c, err := reg.Codec(t.Type)
		if err != nil {
			return st, err
		}
		streams[i] = &stream{MixTopic: t, codec: c, next: time.Duration(rng.Int64N(int64(t.Period)))}
	}
	start := o.Start.UnixNano()
	m := mcap.Message{}
	for {
		i := 0
		for j, s := range streams {
			if s.next < streams[i].next {
				i = j
			}
		}
		s := streams[i]
		if s.next >= o.Duration {
			break
		}
		at := s.next
		pub := start + int64(at)
		data, err := s.codec.Append(m.Data[:0], mixValue(i, at, pub, s.seq, rng))
		if err != nil {
			return st, fmt.Errorf("ros2mcap: %s: %w", s.Topic, err)
		}
		m = mcap.Message{ChannelID: uint16(i + 1), Sequence: s.seq, PublishTime: uint64(pub),
			LogTime: uint64(pub) + uint64(50_000+rng.IntN(450_000)), Data: data}
		if err := mw.WriteMessage(&m); err != nil {
			return st, err
		}
		st.Messages[s.Topic]++
		st.Bytes[s.Topic] += len(data)
		s.seq++
		jitter := float64(s.Period) * (0.9 + 0.2*rng.Float64())
		s.next += time.Duration(jitter)
	}
	return st, mw.Close()
}

func header(pub int64, frame string) rosmsg.Msg {
	return rosmsg.Msg{"stamp": rosmsg.Msg{"sec": int32(pub / 1e9), "nanosec": uint32(pub % 1e9)}, "frame_id": frame}
}

// mixValue is topic i's message at time at (from the start).
func mixValue(i int, at time.Duration, pub int64, seq uint32, rng *rand.Rand) rosmsg.Msg {
	t := at.Seconds()
	switch i {
	case 0: // IMU: gravity, a slow yaw, noise
		n := func() float64 { return rng.NormFloat64() * 0.02 }
		yaw := 0.3 * t
		return rosmsg.Msg{"header": header(pub, "imu_link"),
			"orientation":         rosmsg.Msg{"z": math.Sin(yaw / 2), "w": math.Cos(yaw / 2)},
			"angular_velocity":    rosmsg.Msg{"x": n(), "y": n(), "z": 0.3 + n()},
			"linear_acceleration": rosmsg.Msg{"x": 0.2*math.Sin(t) + n(), "y": n(), "z": 9.81 + n()},
		}
	case 1: // camera: a gradient that scrolls
		data := make([]uint8, camW*camH*3)
		shift := int(seq)
		for y := range camH {
			for x := range camW {
				p := (y*camW + x) * 3
				data[p], data[p+1], data[p+2] = uint8(x+shift), uint8(y), uint8((x+y)/2)
			}
		}
		return rosmsg.Msg{"header": header(pub, "camera_optical"), "height": uint32(camH), "width": uint32(camW),
			"encoding": "rgb8", "step": uint32(camW * 3), "data": data}
	case 2: // lidar: rings around a 5 m room, with noise
		data := make([]uint8, 0, lidarRings*lidarPoints*pointStep)
		for r := range lidarRings {
			elev := (float64(r) - 7.5) * 2 * math.Pi / 180
			for k := range lidarPoints {
				az := 2 * math.Pi * float64(k) / lidarPoints
				d := 5/math.Max(math.Abs(math.Cos(az)), math.Abs(math.Sin(az))) + rng.NormFloat64()*0.01
				for _, v := range []float64{d * math.Cos(az) * math.Cos(elev), d * math.Sin(az) * math.Cos(elev), d * math.Sin(elev), 100} {
					data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
				}
			}
		}
		field := func(name string, off uint32) rosmsg.Msg {
			return rosmsg.Msg{"name": name, "offset": off, "datatype": uint8(7), "count": uint32(1)}
		}
		return rosmsg.Msg{"header": header(pub, "lidar"), "height": uint32(lidarRings), "width": uint32(lidarPoints),
			"fields":     []rosmsg.Msg{field("x", 0), field("y", 4), field("z", 8), field("intensity", 12)},
			"point_step": uint32(pointStep), "row_step": uint32(pointStep * lidarPoints), "data": data, "is_dense": true}
	default: // cmd_vel: forward, weaving
		return rosmsg.Msg{"linear": rosmsg.Msg{"x": 0.5 + 0.1*math.Sin(t/3)}, "angular": rosmsg.Msg{"z": 0.3 * math.Sin(t)}}
	}
}
