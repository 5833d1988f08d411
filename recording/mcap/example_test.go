package mcap_test

import (
	"bytes"
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
