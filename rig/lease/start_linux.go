package lease

import (
	"os"
	"strconv"
	"strings"
)

// procStart is field 22 of /proc/PID/stat (start time, clock ticks since
// boot), "" when the process is gone or the file unreadable.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// comm (field 2) may hold spaces and parentheses: fields count from
	// after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 overall: state is field 3 = f[0]
}
