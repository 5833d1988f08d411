package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hilrig/hilrig/recording/mcap"
)

// recordedRun is one transport and size whose round trips --record
// writes.
type recordedRun struct {
	transport string
	size      int
	h         *hist
}

// roundTrip is one message of a pingpong recording (JSON).
type roundTrip struct {
	Seq int `json:"seq"`
	// SendNs is when the ping was sent, Unix ns (the ping's wall clock);
	// RTTNs the round trip on its monotonic clock; OneWayNs half of it.
	SendNs   int64 `json:"send_unix_ns"`
	RTTNs    int64 `json:"rtt_ns"`
	OneWayNs int64 `json:"one_way_ns"`
}

const roundTripSchema = `{"type":"object","title":"hilrig.RoundTrip","properties":{"seq":{"type":"integer"},` +
	`"send_unix_ns":{"type":"integer"},"rtt_ns":{"type":"integer"},"one_way_ns":{"type":"integer"}}}`

// writeRecording writes runs to c.Record: one JSON channel per run,
// "/pingpong/<transport>/<size>B", a message per timed round trip logged
// at its reply (send + RTT) and published at its send, so a plot shows
// RTT against time. Blocks on file I/O.
func (c *PingPongConfig) writeRecording(runs []recordedRun) (err error) {
	f, err := os.OpenFile(c.Record, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--record %s: %w", c.Record, cerr)
		}
	}()
	w, err := mcap.NewWriter(f, mcap.Options{Header: mcap.Header{Library: "hilrig bench pingpong"}, Compression: mcap.CompressZstd})
	if err != nil {
		return fmt.Errorf("--record %s: %w", c.Record, err)
	}
	err = w.AddSchema(mcap.Schema{ID: 1, Name: "hilrig.RoundTrip", Encoding: "jsonschema", Data: []byte(roundTripSchema)})
	if err == nil {
		err = w.WriteMetadata("hilrig.bench", map[string]string{"transport": c.Transport, "wait": c.Wait.String(), "path": c.Path,
			"round_trips": fmt.Sprint(c.RoundTrips), "warmup": fmt.Sprint(c.Warmup), "reliable": fmt.Sprint(c.Reliable)})
	}
	for i, r := range runs {
		if err != nil {
			break
		}
		id := uint16(i + 1)
		err = w.AddChannel(mcap.Channel{ID: id, SchemaID: 1, Topic: fmt.Sprintf("/pingpong/%s/%dB", r.transport, r.size), MessageEncoding: "json"})
		var b []byte
		for k, s := range r.h.stamps {
			if err != nil {
				break
			}
			b, err = json.Marshal(roundTrip{Seq: k, SendNs: s.sendNs, RTTNs: s.rttNs, OneWayNs: s.rttNs / 2})
			if err == nil {
				err = w.WriteMessage(&mcap.Message{ChannelID: id, Sequence: uint32(k), LogTime: uint64(s.sendNs + s.rttNs), PublishTime: uint64(s.sendNs), Data: b})
			}
		}
	}
	if err = errors.Join(err, w.Close()); err != nil {
		return fmt.Errorf("--record %s: %w", c.Record, err)
	}
	return nil
}
