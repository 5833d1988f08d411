package middleware

import "testing"

// TestLifecycleEnterLive: enterLive takes a reference after Close while a
// call still holds one, and the last leave (here enterLive's own) is the
// one that tears down; with no call left it refuses, as enter does after
// Close.
func TestLifecycleEnterLive(t *testing.T) {
	var l lifecycle
	l.init()
	if !l.enter() { // a running call
		t.Fatal("enter before Close refused")
	}
	if first, last := l.close(); !first || last {
		t.Fatalf("close with a call running: first %v last %v, want true false", first, last)
	}
	if l.enter() {
		t.Fatal("enter after Close succeeded")
	}
	if !l.enterLive() {
		t.Fatal("enterLive after Close, with a call still running, refused")
	}
	if l.leave() {
		t.Fatal("the running call's leave reported last while enterLive's reference is held")
	}
	if !l.leave() {
		t.Fatal("enterLive's leave, the last reference, did not report last")
	}
	if l.enterLive() {
		t.Fatal("enterLive after the last reference was dropped succeeded")
	}
}
