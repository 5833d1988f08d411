package mcap_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/recording/mcap"
)

// Writing a zstd-chunked file and reading it back with the stream reader.
func Example() {
	var file bytes.Buffer
	w, err := mcap.NewWriter(&file, mcap.Options{
		Header:      mcap.Header{Profile: "", Library: "hilrig example"},
		Compression: mcap.CompressZstd,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = w.AddSchema(mcap.Schema{ID: 1, Name: "Tick", Encoding: "jsonschema", Data: []byte(`{"type":"object"}`)})
	_ = w.AddChannel(mcap.Channel{ID: 1, SchemaID: 1, Topic: "/tick", MessageEncoding: "json"})
	m := mcap.Message{ChannelID: 1}
	for i := range 3 {
		m.Sequence, m.LogTime, m.PublishTime = uint32(i), uint64(i)*1e9, uint64(i)*1e9
		m.Data = fmt.Appendf(m.Data[:0], `{"n":%d}`, i) // the writer copies: Data may be reused
		if err := w.WriteMessage(&m); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}

	r, err := mcap.NewStreamReader(&file, mcap.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		ch, _ := r.Channel(m.ChannelID)
		fmt.Printf("%s %d %s\n", ch.Topic, m.LogTime, m.Data)
	}
	fmt.Println("chunks:", r.Seen().Chunks[mcap.CompressZstd].Count)
	// Output:
	// /tick 0 {"n":0}
	// /tick 1000000000 {"n":1}
	// /tick 2000000000 {"n":2}
	// chunks: 1
}

// A recording cut short (a killed writer) is made whole again by Recover,
// and then read through its summary.
func ExampleRecover() {
	var file bytes.Buffer
	w, _ := mcap.NewWriter(&file, mcap.Options{ChunkSize: 64})
	_ = w.AddChannel(mcap.Channel{ID: 1, Topic: "/n", MessageEncoding: "json"})
	for i := range 10 {
		_ = w.WriteMessage(&mcap.Message{ChannelID: 1, LogTime: uint64(i), Data: []byte(`{"n":0}`)})
	}
	// No Close: the writer was killed, the last chunk half written.
	cut := file.Bytes()[:file.Len()-10]

	var whole bytes.Buffer
	rep, err := mcap.Recover(&whole, bytes.NewReader(cut), mcap.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("kept", rep.Messages, "messages in", rep.Chunks, "chunks; stopped:", errors.Is(rep.Stop, mcap.ErrTruncated))
	x, err := mcap.NewIndexedReader(bytes.NewReader(whole.Bytes()), int64(whole.Len()), mcap.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer x.Close()
	fmt.Println("summary counts", x.Statistics().MessageCount, "messages")
	// Output:
	// kept 9 messages in 9 chunks; stopped: true
	// summary counts 9 messages
}
