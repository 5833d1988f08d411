package middleware

import (
	"os"
	"syscall"
)

// threadNetns is the inode of the calling thread's network namespace (0
// when /proc does not tell). Sockets are created in that namespace, so
// endpoints a test creates inside two (*netns.NS).Do calls get two
// announcers even on one Node.
func threadNetns() uint64 {
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
