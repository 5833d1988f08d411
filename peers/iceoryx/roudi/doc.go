// Package roudi starts, detects and stops iceoryx's RouDi daemon
// (iox-roudi, Debian package iceoryx) for the iceoryx peer: a
// configuration sized for the payloads, stopped by its PID, with every
// file it leaves removed. Pure Go (no cgo), so the peer bench can start
// one before its agents; Linux only.
package roudi
