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
// hilrig's stream reader) and their publish times after the span's first
// (over every channel: the channels keep their phase) halved, a period
// of 250 ms, the earliest channel starting at 0, sizes up to the channel's largest.
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
	t0 := int64(-1) // the span's first publish time, over every channel
	for _, p := range pub {
		if t0 < 0 || p[0] < t0 {
			t0 = p[0]
		}
	}
	var topics []string
	firstOffset := int64(-1)
	for _, ch := range plan.Channels {
		topics = append(topics, ch.Topic)
		if !slices.Equal(ch.Plan.Sizes, want[ch.Topic]) {
			t.Errorf("%s: sizes %v, recorded %v", ch.Topic, ch.Plan.Sizes, want[ch.Topic])
		}
		for i, at := range pub[ch.Topic] {
			if ch.Plan.OffsetsNs[i] != (at-t0)/2 {
				t.Fatalf("%s: offset %d is %d, want half of %d (its publish time after the span's first)", ch.Topic, i, ch.Plan.OffsetsNs[i], at-t0)
			}
		}
		if firstOffset < 0 || ch.Plan.OffsetsNs[0] < firstOffset {
			firstOffset = ch.Plan.OffsetsNs[0]
		}
		if ch.Plan.PeriodNs != int64(250*time.Millisecond) || !slices.IsSorted(ch.Plan.OffsetsNs) {
			t.Errorf("%s: period %d, offsets sorted %v", ch.Topic, ch.Plan.PeriodNs, slices.IsSorted(ch.Plan.OffsetsNs))
		}
		if slices.Min(ch.Plan.Sizes) < agentproto.PeerHeaderBytes || slices.Max(ch.Plan.Sizes) != ch.MaxSize {
			t.Errorf("%s: sizes %d..%d, max %d", ch.Topic, slices.Min(ch.Plan.Sizes), slices.Max(ch.Plan.Sizes), ch.MaxSize)
		}
	}
	if firstOffset != 0 {
		t.Errorf("earliest first offset %d, want 0: the channels keep their phase from the span's first message", firstOffset)
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
