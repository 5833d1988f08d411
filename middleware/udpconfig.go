package middleware

import "time"

// UDPConfig configures the UDP transport of a topic (issue 3 owns this file).
type UDPConfig struct {
	// Listen is the subscriber's local address, "host:port".
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// Peers are the remote subscribers' unicast addresses a publisher sends to.
	Peers []string `yaml:"peers,omitempty" json:"peers,omitempty"`
	// Group is a multicast group "addr:port" used instead of Peers.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// Interface is the interface multicast is bound to ("lo" or a veth);
	// required with Group: never the default interface.
	Interface string `yaml:"interface,omitempty" json:"interface,omitempty"`
	// FragmentSize is the payload bytes per datagram. Default 1472-header.
	FragmentSize int `yaml:"fragment_size,omitempty" json:"fragment_size,omitempty"`
	// BatchBytes/BatchDelay enable batching of small messages.
	BatchBytes int           `yaml:"batch_bytes,omitempty" json:"batch_bytes,omitempty"`
	BatchDelay time.Duration `yaml:"batch_delay,omitempty" json:"batch_delay,omitempty"`
}
