package ros2mcap_test

import (
	"bytes"
	"fmt"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// A ROS 2 topic recorded as ros2 bag records it.
func ExampleSchema() {
	reg, _ := rosmsg.Shipped()
	schema, err := ros2mcap.Schema(reg, 1, "geometry_msgs/Twist")
	if err != nil {
		fmt.Println(err)
		return
	}
	codec, _ := reg.Codec("geometry_msgs/Twist")
	payload, _ := codec.Append(nil, rosmsg.Msg{"linear": rosmsg.Msg{"x": 0.5}})

	var file bytes.Buffer
	w, _ := mcap.NewWriter(&file, mcap.Options{Header: mcap.Header{Profile: ros2mcap.Profile}, Compression: mcap.CompressZstd})
	_ = w.AddSchema(schema)
	_ = w.AddChannel(ros2mcap.Channel(1, 1, "/cmd_vel", ""))
	_ = w.WriteMessage(&mcap.Message{ChannelID: 1, LogTime: 1, PublishTime: 1, Data: payload})
	_ = w.Close()

	fmt.Println(schema.Name, schema.Encoding)
	fmt.Printf("%s", schema.Data[:bytes.IndexByte(schema.Data, '\n')+1])
	// Output:
	// geometry_msgs/msg/Twist ros2msg
	// Vector3  linear
}
