// Package ros2mcap writes and reads ROS 2 topics in MCAP as ros2 bag does:
// profile "ros2", message encoding "cdr", schema encoding "ros2msg" whose
// text is the top-level .msg definition followed by each type it uses,
// each after a line of 80 '=' and "MSG: pkg/Type" (rosmsg.Registry's
// FullText). Schemas are named "pkg/msg/Type".
package ros2mcap

import (
	"fmt"
	"strings"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// The names ros2 bag writes.
const (
	Profile         = "ros2"
	MessageEncoding = "cdr"
	SchemaEncoding  = "ros2msg"
)

// maxSchemaSections bounds how many definitions one schema text may hold.
const maxSchemaSections = 1024

// Schema is the MCAP schema of the ROS 2 type typeName ("pkg/Type" or
// "pkg/msg/Type") from reg, with the given ID.
func Schema(reg *rosmsg.Registry, id uint16, typeName string) (mcap.Schema, error) {
	text, err := reg.FullText(typeName)
	if err != nil {
		return mcap.Schema{}, fmt.Errorf("ros2mcap: schema of %s: %w", typeName, err)
	}
	return mcap.Schema{ID: id, Name: longName(typeName), Encoding: SchemaEncoding, Data: []byte(text)}, nil
}

// Channel is the MCAP channel of a ROS 2 topic; qos, when not empty, is
// ros2 bag's "offered_qos_profiles" metadata (YAML).
func Channel(id, schemaID uint16, topic, qos string) mcap.Channel {
	md := map[string]string{}
	if qos != "" {
		md["offered_qos_profiles"] = qos
	}
	return mcap.Channel{ID: id, SchemaID: schemaID, Topic: topic, MessageEncoding: MessageEncoding, Metadata: md}
}

// longName is "pkg/msg/Type" for "pkg/Type".
func longName(s string) string {
	if strings.Contains(s, "/msg/") {
		return s
	}
	if p, n, ok := strings.Cut(s, "/"); ok {
		return p + "/msg/" + n
	}
	return s
}

// Codec parses a ros2msg schema (the top-level definition, then each
// dependency after a separator line and "MSG: pkg/Type") into a registry
// of its own and returns the codec of the schema's type.
func Codec(s *mcap.Schema) (*rosmsg.Codec, error) {
	if s.Encoding != SchemaEncoding {
		return nil, fmt.Errorf("ros2mcap: schema %d (%s) is %q, not %s", s.ID, s.Name, s.Encoding, SchemaEncoding)
	}
	reg := rosmsg.NewRegistry()
	name := shortName(s.Name)
	var body strings.Builder
	sections := 0
	flush := func() error {
		sections++
		if sections > maxSchemaSections {
			return fmt.Errorf("over %d definitions", maxSchemaSections)
		}
		if err := reg.AddText(name, body.String()); err != nil {
			return err
		}
		body.Reset()
		return nil
	}
	lines := strings.Split(string(s.Data), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		if isSeparator(line) && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "MSG: ") {
			if err := flush(); err != nil {
				return nil, fmt.Errorf("ros2mcap: schema %d (%s): %w", s.ID, s.Name, err)
			}
			name = shortName(strings.TrimSpace(strings.TrimPrefix(lines[i+1], "MSG: ")))
			i++
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("ros2mcap: schema %d (%s): %w", s.ID, s.Name, err)
	}
	c, err := reg.Codec(shortName(s.Name))
	if err != nil {
		return nil, fmt.Errorf("ros2mcap: schema %d (%s): %w", s.ID, s.Name, err)
	}
	return c, nil
}

func isSeparator(line string) bool {
	return len(line) >= 3 && strings.Trim(line, "=") == ""
}

// shortName is "pkg/Type" for "pkg/msg/Type".
func shortName(s string) string {
	if p, n, ok := strings.Cut(s, "/msg/"); ok {
		return p + "/" + n
	}
	return s
}
