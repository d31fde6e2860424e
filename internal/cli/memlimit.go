package cli

import (
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// The Go runtime sizes its heap by GOGC alone and does not know the
// container's memory limit: a process whose heap grows towards the limit
// is OOM-killed before the collector works any harder. A soft limit below
// the container's makes the collector run more often near it. The rest of
// the container's memory is left to what the soft limit does not count
// well (cgo-free as we are: goroutine stacks, fragmentation, page cache
// charged to the cgroup).
const memoryLimitShare = 0.85

// cgroupRootFiles hold the memory limit of the cgroup mounted at
// /sys/fs/cgroup: the container's own in a pod (cgroup v2, then v1).
var cgroupRootFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// cgroupMemoryFiles lists the files that may hold this process's memory
// limit: those of its own cgroup as /proc/self/cgroup names it (a process
// placed in a cgroup below the mount, as a systemd unit or a test puts it,
// is limited there, not at the root), then the root's.
func cgroupMemoryFiles(readFile func(string) ([]byte, error)) []string {
	var files []string
	if b, err := readFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || parts[2] == "/" || strings.Contains(parts[2], "..") {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				files = append(files, "/sys/fs/cgroup"+parts[2]+"/memory.max")
			case slices.Contains(strings.Split(parts[1], ","), "memory"):
				files = append(files, "/sys/fs/cgroup/memory"+parts[2]+"/memory.limit_in_bytes")
			}
		}
	}
	return append(files, cgroupRootFiles...)
}

// unlimitedFrom: cgroup v1 says "no limit" with the largest page-aligned
// int64 (9223372036854771712), and no machine has 4 EiB; any value from
// 2^62 up means no limit.
const unlimitedFrom = 1 << 62

// parseMemoryLimit reads the content of a cgroup memory limit file. ok is
// false when the file sets no limit ("max", a huge value) or is not a
// positive number.
func parseMemoryLimit(content string) (limit int64, ok bool) {
	s := strings.TrimSpace(content)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= unlimitedFrom {
		return 0, false
	}
	return n, true
}

// containerMemoryLimit returns the lowest limit among the cgroup files
// that can be read (cgroupMemoryFiles) and the file it came from.
func containerMemoryLimit(readFile func(string) ([]byte, error)) (limit int64, file string, ok bool) {
	for _, f := range cgroupMemoryFiles(readFile) {
		b, err := readFile(f)
		if err != nil {
			continue
		}
		if l, lok := parseMemoryLimit(string(b)); lok && (!ok || l < limit) {
			limit, file, ok = l, f, true
		}
	}
	return limit, file, ok
}

// softMemoryLimit is the Go memory limit for a container limit.
func softMemoryLimit(container int64) int64 {
	return int64(float64(container) * memoryLimitShare)
}

// applyMemoryLimit sets the runtime's soft memory limit from the
// container's when GOMEMLIMIT does not set one (an explicit GOMEMLIMIT,
// "off" included, is the operator's decision and wins).
func applyMemoryLimit(log logr.Logger, getenv func(string) string, readFile func(string) ([]byte, error), set func(int64) int64) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, file, ok := containerMemoryLimit(readFile)
	if !ok {
		return
	}
	soft := softMemoryLimit(limit)
	set(soft)
	log.V(1).Info("memory limit set from the container's", "file", file, "containerLimit", limit, "goMemLimit", soft)
}

// applyContainerMemoryLimit is applyMemoryLimit on this process.
func applyContainerMemoryLimit(log logr.Logger) {
	applyMemoryLimit(log, os.Getenv, os.ReadFile, debug.SetMemoryLimit)
}
