package steps_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

// TestLoadReplay: the sample mix planned for its first 500 ms at rate ×2,
// looped 3 times: a channel per topic in channel order, each with the
// recorded sizes of the messages logged in the span (read back here with
// hilrig's stream reader) and their publish times halved, a period of
// 250 ms, offsets from 0 and sizes up to the channel's largest.
func TestLoadReplay(t *testing.T) {
	var file bytes.Buffer
	if _, err := steps.SampleMix(&file, time.Second); err != nil {
		t.Fatal(err)
	}
	raw := file.Bytes()
	plan, err := steps.LoadReplay(bytes.NewReader(raw), "mix", 500*time.Millisecond, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{}
	pub := map[string][]int64{}
	r, err := mcap.NewStreamReader(bytes.NewReader(raw), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := uint64(0)
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 || m.LogTime < first {
			first = m.LogTime
		}
		if m.LogTime-first < uint64(500*time.Millisecond) {
			ch, _ := r.Channel(m.ChannelID)
			want[ch.Topic] = append(want[ch.Topic], len(m.Data))
			pub[ch.Topic] = append(pub[ch.Topic], int64(m.PublishTime))
		}
	}
	var topics []string
	for _, ch := range plan.Channels {
		topics = append(topics, ch.Topic)
		if !slices.Equal(ch.Plan.Sizes, want[ch.Topic]) {
			t.Errorf("%s: sizes %v, recorded %v", ch.Topic, ch.Plan.Sizes, want[ch.Topic])
		}
		p := pub[ch.Topic]
		if last := ch.Plan.OffsetsNs[len(ch.Plan.OffsetsNs)-1]; last != (p[len(p)-1]-p[0])/2 {
			t.Errorf("%s: last offset %d, want half of %d", ch.Topic, last, p[len(p)-1]-p[0])
		}
		if ch.Plan.PeriodNs != int64(250*time.Millisecond) || !slices.IsSorted(ch.Plan.OffsetsNs) {
			t.Errorf("%s: period %d, offsets sorted %v", ch.Topic, ch.Plan.PeriodNs, slices.IsSorted(ch.Plan.OffsetsNs))
		}
		if ch.Plan.OffsetsNs[0] != 0 || slices.Min(ch.Plan.Sizes) < agentproto.PeerHeaderBytes || slices.Max(ch.Plan.Sizes) != ch.MaxSize {
			t.Errorf("%s: first offset %d, sizes %d..%d, max %d", ch.Topic, ch.Plan.OffsetsNs[0], slices.Min(ch.Plan.Sizes), slices.Max(ch.Plan.Sizes), ch.MaxSize)
		}
	}
	if !slices.Equal(topics, []string{"/imu", "/camera/image_raw", "/lidar/points", "/cmd_vel"}) {
		t.Fatalf("topics %v", topics)
	}
	if plan.Channels[1].Type != "sensor_msgs/msg/Image" || plan.Channels[0].RateHz() < 150 {
		t.Fatalf("camera %+v, imu at %.0f Hz", plan.Channels[1].Type, plan.Channels[0].RateHz())
	}

	if _, err := steps.LoadReplay(bytes.NewReader(raw[:len(raw)/2]), "cut", time.Second, 1, 1); !errors.Is(err, steps.ErrReplay) || !errors.Is(err, mcap.ErrTruncated) {
		t.Errorf("cut file: %v, want ErrReplay and mcap.ErrTruncated", err)
	}
	if _, err := steps.LoadReplay(bytes.NewReader(raw), "x", 0, 1, 1); !errors.Is(err, steps.ErrReplay) {
		t.Errorf("zero span: %v", err)
	}
}
