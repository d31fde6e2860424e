package cli

import (
	"io/fs"
	"testing"

	"github.com/go-logr/logr"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		content string
		limit   int64
		ok      bool
	}{
		{"536870912\n", 536870912, true},
		{"536870912", 536870912, true},
		{"max\n", 0, false},
		{"9223372036854771712\n", 0, false}, // cgroup v1 "unlimited"
		{"4611686018427387904", 0, false},   // 2^62
		{"0", 0, false},
		{"-1", 0, false},
		{"", 0, false},
		{"lots", 0, false},
		{"99999999999999999999", 0, false},
	} {
		limit, ok := parseMemoryLimit(c.content)
		if limit != c.limit || ok != c.ok {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d, %v", c.content, limit, ok, c.limit, c.ok)
		}
	}
}

func TestApplyMemoryLimit(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, c := range []struct {
		name  string
		env   string
		files map[string]string
		want  int64 // 0: not set
	}{
		{"cgroup v2", "", map[string]string{v2: "1073741824\n"}, 912680550},
		{"cgroup v2 unlimited, v1 root limited", "", map[string]string{v2: "max\n", v1: "1073741824"}, 912680550},
		{"own v1 cgroup below the root", "", map[string]string{
			"/proc/self/cgroup": "5:devices:/\n4:memory:/pods/pump\n0::/\n",
			"/sys/fs/cgroup/memory/pods/pump/memory.limit_in_bytes": "536870912\n",
			v1: "9223372036854771712\n"}, 456340275},
		{"own v2 cgroup below the root", "", map[string]string{
			"/proc/self/cgroup": "0::/system.slice/flightfeed.service\n",
			"/sys/fs/cgroup/system.slice/flightfeed.service/memory.max": "536870912\n",
			v2: "max\n"}, 456340275},
		{"root lower than own", "", map[string]string{
			"/proc/self/cgroup":                             "4:memory:/a\n",
			"/sys/fs/cgroup/memory/a/memory.limit_in_bytes": "1073741824\n",
			v1: "536870912\n"}, 456340275},
		{"cgroup v1", "", map[string]string{v1: "1073741824\n"}, 912680550},
		{"cgroup v1 unlimited", "", map[string]string{v1: "9223372036854771712\n"}, 0},
		{"no cgroup files", "", nil, 0},
		{"GOMEMLIMIT wins", "200MiB", map[string]string{v2: "1073741824"}, 0},
		{"GOMEMLIMIT off wins", "off", map[string]string{v2: "1073741824"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got int64
			applyMemoryLimit(logr.Discard(),
				func(k string) string {
					if k == "GOMEMLIMIT" {
						return c.env
					}
					return ""
				},
				func(f string) ([]byte, error) {
					if s, ok := c.files[f]; ok {
						return []byte(s), nil
					}
					return nil, fs.ErrNotExist
				},
				func(n int64) int64 { got = n; return 0 })
			if got != c.want {
				t.Errorf("memory limit set to %d, want %d", got, c.want)
			}
		})
	}
}
