// Package thp says whether the tmpfs holding a directory gives transparent
// huge pages to a mapping of one of its files, and why not when it does
// not. One judgement for the middleware (which warns when a segment that
// asked for huge pages cannot get them) and the per-case counters (which
// explain a 4 KiB mapping in the report).
package thp

import (
	"os"
	"strings"
)

// Tmpfs says in words whether files under dir can get transparent huge
// pages, reading procDir/mounts and
// sysDir/kernel/mm/transparent_hugepage/shmem_enabled ("/proc" and "/sys"
// on a live system). A mounted tmpfs such as /dev/shm follows its own
// huge= mount option (unset means never), not shmem_enabled, which
// governs only the kernel's internal shmem mount — except its "force" and
// "deny", which override every mount. huge=advise counts: the middleware
// madvises a segment's slots and populates them through the mapping
// (Linux ≥ 5.14). Reads files; safe for concurrent use.
func Tmpfs(procDir, sysDir, dir string) (words string, ok bool) {
	sel := selected(readTrim(sysDir + "/kernel/mm/transparent_hugepage/shmem_enabled"))
	mnt, fstype, huge := mountOf(procDir+"/mounts", dir)
	switch {
	case sel == "":
		return "tmpfs THP: no /sys/kernel/mm/transparent_hugepage/shmem_enabled (kernel without CONFIG_TRANSPARENT_HUGEPAGE)", false
	case sel == "deny":
		return "tmpfs THP: shmem_enabled=deny (off for every tmpfs)", false
	case sel == "force":
		return "tmpfs THP: shmem_enabled=force (on for every tmpfs)", true
	case fstype != "tmpfs":
		if fstype == "" {
			fstype = "an unknown filesystem"
		}
		return "tmpfs THP: " + dir + " is on " + fstype + ", not tmpfs", false
	case huge == "always" || huge == "within_size":
		return "tmpfs THP: " + mnt + " mounted huge=" + huge + " (2 MiB-aligned ranges of a segment get 2 MiB pages)", true
	case huge == "advise":
		return "tmpfs THP: " + mnt + " mounted huge=advise (the middleware madvises a segment's slots: their 2 MiB-aligned ranges get 2 MiB pages; Linux ≥ 5.14)", true
	}
	return "tmpfs THP: " + mnt + " mounted " + hugeOpt(huge) + " (never; e.g. mount -o remount,huge=within_size " + mnt + ")", false
}

// hugeOpt spells a tmpfs huge= option as mounted.
func hugeOpt(v string) string {
	if v == "" {
		return "without huge="
	}
	return "huge=" + v
}

// mountOf returns the mount point, filesystem type and huge= option of
// the mount holding dir (the longest mount point that prefixes it; later
// lines of /proc/mounts win, as the kernel stacks them).
func mountOf(mounts, dir string) (mnt, fstype, huge string) {
	b, err := os.ReadFile(mounts)
	if err != nil {
		return "", "", ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		m := f[1]
		if !(dir == m || m == "/" || strings.HasPrefix(dir, m+"/")) || len(m) < len(mnt) {
			continue
		}
		mnt, fstype, huge = m, f[2], ""
		for _, o := range strings.Split(f[3], ",") {
			if v, ok := strings.CutPrefix(o, "huge="); ok {
				huge = v
			}
		}
	}
	return mnt, fstype, huge
}

// selected returns the bracketed choice of a sysfs choice list
// ("always [never] advise" → "never"), or the text itself when it has
// no brackets.
func selected(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return s
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
