package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memFigures are one process's memory in MiB, as the kernel counts it.
//
// VmRSS counts every page the process has mapped, and most of a Go
// binary's are its own text and read-only data: clean pages of the
// binary file, one copy in the page cache for every process of the same
// image on a node, which the kernel maps 64 KiB around each page touched
// (fault-around) and takes back under pressure. So beside VmRSS:
// Anon, the process's own pages (heap, stacks, runtime); File, the
// mapped file pages; Pss, the pages divided among the processes sharing
// them (what N pump pods on one node cost each); Referenced, the pages
// touched in a window after the kernel's referenced bits were cleared
// (the idle working set).
type memFigures struct {
	RSS, HWM, Anon, File, Pss, Referenced float64
}

// readMemory reads pid's VmRSS, VmHWM, RssAnon and RssFile
// (/proc/PID/status) and its Pss (/proc/PID/smaps_rollup).
func readMemory(pid int) (memFigures, error) {
	var m memFigures
	status, err := kbFields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	rollup, err := kbFields(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m, err
	}
	m.RSS, m.HWM, m.Anon, m.File = status["VmRSS"], status["VmHWM"], status["RssAnon"], status["RssFile"]
	m.Pss, m.Referenced = rollup["Pss"], rollup["Referenced"]
	if m.RSS == 0 {
		return m, fmt.Errorf("process %d: no VmRSS", pid)
	}
	return m, nil
}

// kbFields reads the "Name:  N kB" lines of a /proc file, in MiB.
func kbFields(path string) (map[string]float64, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a /proc path of a child process
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		field, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if !strings.HasSuffix(v, " kB") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, field, err)
		}
		out[field] = kb / 1024
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no kB fields")
	}
	return out, nil
}

// String is one line of figures.
func (m memFigures) String() string {
	s := fmt.Sprintf("VmRSS %.1f MiB (own %.1f, binary's pages %.1f), PSS %.1f", m.RSS, m.Anon, m.File, m.Pss)
	if m.Referenced > 0 {
		s += fmt.Sprintf(", touched idle %.1f", m.Referenced)
	}
	return s + fmt.Sprintf(", peak %.1f", m.HWM)
}
