// Package agentproto is the control protocol between the controller
// (rig) and `hilrig agent` on a board: line-delimited JSON, one
// [Msg] per line, over whatever byte stream reaches the board (a pipe, `ip
// netns exec`, an SSH session) — nothing in it depends on the transport.
//
// Conversation (C = controller, A = agent):
//
//	A: hello   (protocol version, agent build, host facts) — first line always
//	C: hello   (controller's protocol version; A checks it)
//	C: start   (an endpoint: publisher, subscriber, a round-trip
//	            pinger/echo, echo.go, or a CPU load, load.go)
//	                                                     A: started | error
//	A: window  (periodic summaries per endpoint)
//	A: final   (per endpoint, when it ends: count reached, duration over,
//	            stopped, or failed)
//	C: stop    (one endpoint, or all)                    A: final… then bye
//	C: <EOF>   (controller went away)                    A: stops all, bye, exits
//
// Every message carries "v" (the protocol version, [Version]). Decoding is
// strict: unknown fields, a payload that does not match "kind", invalid
// start parameters and oversized lines are structured *Error values (never
// a crash); the agent answers them with an "error" message and carries on.
//
// The types are plain data; Encoder is safe for concurrent use, Decoder is
// not.
package agentproto
