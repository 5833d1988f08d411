// Package procgroup runs a child command as the leader of its own process
// group so that everything it starts can be killed with it: a shell's
// background job, a wrapper's grandchild. Off Linux only the child itself
// is killed.
//
// The functions are safe for concurrent use and do not block.
package procgroup
