package ros2mcap_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// The sample mix: each topic at its rate (±10% jitter), every payload
// decoding with the codec its schema text gives, the sizes the types
// imply, and the same bytes for the same options.
func TestWriteMix(t *testing.T) {
	var b bytes.Buffer
	o := ros2mcap.MixOptions{Duration: 2 * time.Second, Seed: 7, Compression: mcap.CompressZstd}
	st, err := ros2mcap.WriteMix(&b, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range ros2mcap.MixTopics {
		want := float64(o.Duration / tp.Period)
		if n := float64(st.Messages[tp.Topic]); n < want*0.85 || n > want*1.15+1 {
			t.Errorf("%s: %v messages in %v, want about %v", tp.Topic, n, o.Duration, want)
		}
	}
	r, err := mcap.NewStreamReader(bytes.NewReader(b.Bytes()), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Header().Profile != "ros2" {
		t.Errorf("profile %q", r.Header().Profile)
	}
	codecs := map[uint16]*rosmsg.Codec{}
	count := map[string]int{}
	var lastPub uint64
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := r.Channel(m.ChannelID)
		c := codecs[ch.SchemaID]
		if c == nil {
			s, _ := r.Schema(ch.SchemaID)
			if c, err = ros2mcap.Codec(s); err != nil {
				t.Fatal(err)
			}
			codecs[ch.SchemaID] = c
		}
		v, err := c.Decode(m.Data)
		if err != nil {
			t.Fatalf("%s #%d: %v", ch.Topic, m.Sequence, err)
		}
		if ch.Topic == "/lidar/points" && len(v["data"].([]uint8)) != 16*256*16 {
			t.Fatalf("lidar cloud of %d bytes", len(v["data"].([]uint8)))
		}
		if m.PublishTime < lastPub || m.LogTime <= m.PublishTime {
			t.Fatalf("%s #%d: publish %d after %d, log %d", ch.Topic, m.Sequence, m.PublishTime, lastPub, m.LogTime)
		}
		lastPub = m.PublishTime
		count[ch.Topic]++
	}
	for topic, n := range st.Messages {
		if count[topic] != n {
			t.Errorf("%s: read %d messages, wrote %d", topic, count[topic], n)
		}
	}
	var again bytes.Buffer
	if _, err := ros2mcap.WriteMix(&again, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Error("the same options wrote different bytes")
	}
}
