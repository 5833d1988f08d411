//go:build linux

package middleware_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hilrig/hilrig/middleware"
)

var transports = []struct {
	name string
	tr   middleware.Transport
}{
	{"shm", middleware.TransportShm},
	{"intra", middleware.TransportIntra},
	{"auto", middleware.TransportAuto},
}

func TestSendReceive(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "n1", d)
			c := middleware.Contract{Topic: "cmd/vel", MaxPayload: 64, Depth: 8, Transport: tc.tr, Reliability: middleware.Reliable}
			sub, pub := openPair(t, n, c)
			ctx := ctxT(t, 10e9)
			for i := 1; i <= 50; i++ {
				want := fmt.Appendf(nil, "msg-%d", i)
				if i%2 == 0 {
					if err := pub.Send(want); err != nil {
						t.Fatal(err)
					}
				} else {
					l, err := pub.Loan()
					if err != nil {
						t.Fatal(err)
					}
					if len(l.Bytes()) != 64 {
						t.Fatalf("loan of %d bytes, want 64", len(l.Bytes()))
					}
					if err := l.Publish(copy(l.Bytes(), want)); err != nil {
						t.Fatal(err)
					}
				}
				var got []byte
				var h middleware.Header
				if err := sub.Next(ctx, func(m *middleware.Message) { got = m.CopyPayload(nil); h = m.Header }); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("message %d: got %q want %q", i, got, want)
				}
				if h.Seq != uint64(i) || h.Len != uint32(len(want)) || h.TopicID != middleware.TopicID(c.Topic) || h.Version != 1 || h.SendMono == 0 || h.SendClock == 0 || h.Clock != middleware.ClockRealtime {
					t.Fatalf("message %d: header %+v", i, h)
				}
			}
			if st := sub.Stats(); st.Delivered != 50 || st.Lost != 0 {
				t.Fatalf("subscriber stats %+v", st)
			}
			if st := pub.Stats(); st.Published != 50 {
				t.Fatalf("publisher stats %+v", st)
			}
			if err := pub.Send(make([]byte, 65)); !errors.Is(err, middleware.ErrTooLarge) {
				t.Fatalf("Send of 65 bytes: %v, want ErrTooLarge", err)
			}
		})
	}
}
