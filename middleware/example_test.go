package middleware_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Publish and subscribe on one topic in one process. Both ends declare
// the same contract; the subscriber exists before the message is sent, so
// it receives it. The payload is a view valid only inside the callback.
func Example() {
	node, err := middleware.OpenNode("example", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	c := middleware.Contract{Topic: "example/hello", MaxPayload: 64, Transport: middleware.TransportIntra}
	sub, err := node.NewSubscriber(c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	pub, err := node.NewPublisher(c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Close()

	if err := pub.Send([]byte("hello, bus")); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = sub.Next(ctx, func(m *middleware.Message) {
		fmt.Printf("seq %d: %s (lost %d)\n", m.Header.Seq, m.Payload, m.Lost)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: seq 1: hello, bus (lost 0)
}

// A loan writes the payload straight into the shared-memory slot the
// subscriber will read (zero copy): fill Bytes, then Publish the length.
// The segment lives in a throw-away directory here instead of /dev/shm.
func ExamplePublisher_Loan() {
	dir, err := os.MkdirTemp("", "hilrig-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	node, err := middleware.OpenNode("example", &middleware.NodeOptions{ShmDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	c := middleware.Contract{Topic: "example/loan", MaxPayload: 1024, Transport: middleware.TransportShm}
	sub, err := node.NewSubscriber(c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	pub, err := node.NewPublisher(c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Close()

	loan, err := pub.Loan()
	if err != nil {
		fmt.Println(err)
		return
	}
	n := copy(loan.Bytes(), "filled in place")
	if err := loan.Publish(n); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = sub.Next(ctx, func(m *middleware.Message) {
		fmt.Printf("%d bytes: %s\n", m.Header.Len, m.Payload)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: 15 bytes: filled in place
}
