package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// cpuSample is the CPU time used so far by the services a drain keeps
// busy: PostgreSQL (the postmaster, its live children and the backends it
// reaped), MariaDB, and this process (the in-process kfake broker and the
// Kafka consumer). The pump's own time comes from its rusage at exit.
// CPU seconds depend far less than wall time on what else the machine
// runs, so they say which process a drain spends its time in even on a
// loaded machine; they still move by a fifth from run to run here (a
// virtual machine), and PostgreSQL's include whatever autovacuum did
// during the drain and every other database's backends.
type cpuSample struct {
	postgres, mariadb, bench time.Duration
}

// clockTick is USER_HZ, the unit of /proc/*/stat times (100 on Linux).
const clockTick = 100

func sampleCPU() cpuSample {
	var s cpuSample
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		raw, err := os.ReadFile(path) //nolint:gosec // procfs
		if err != nil {
			continue
		}
		comm, fields, ok := parseStat(raw)
		if !ok {
			continue
		}
		// fields[0] is field 3 (state): utime is field 14, stime 15,
		// cutime 16, cstime 17.
		own := ticks(fields[11]) + ticks(fields[12])
		reaped := ticks(fields[13]) + ticks(fields[14])
		switch comm {
		case "postgres":
			// Backends of the pump exit with it: the postmaster reaps them
			// and adds their time to its cutime/cstime.
			s.postgres += own + reaped
		case "mariadbd", "mysqld":
			s.mariadb += own
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.bench = tv(ru.Utime) + tv(ru.Stime)
	}
	return s
}

// parseStat splits /proc/PID/stat after its "(comm)" field.
func parseStat(raw []byte) (comm string, fields [][]byte, ok bool) {
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	fields = bytes.Fields(raw[end+1:])
	if len(fields) < 15 {
		return "", nil, false
	}
	return string(raw[open+1 : end]), fields, true
}

func ticks(b []byte) time.Duration {
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return time.Duration(n) * time.Second / clockTick
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func processCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// cpuLine prints the CPU seconds of a drain by process, and returns their
// sum; it fills c's server-wide fields from the samples (c.pump and
// c.feedPG are the caller's).
func cpuLine(c *procCPU, before, after cpuSample, wall time.Duration) (string, time.Duration) {
	c.postgres, c.mariadb, c.broker = after.postgres-before.postgres, after.mariadb-before.mariadb, after.bench-before.bench
	total := c.total()
	return fmt.Sprintf("CPU %.2f s in %.2f s wall (%.0f%% of 2 cores): pump %.2f, postgres %.2f (the feed's backends %.2f), mariadb %.2f (the mailbox's threads %.2f), kfake+consumer %.2f",
		total.Seconds(), wall.Seconds(), 100*total.Seconds()/(2*wall.Seconds()),
		c.pump.Seconds(), c.postgres.Seconds(), c.feedPG.Seconds(), c.mariadb.Seconds(), c.feedMy.Seconds(), c.broker.Seconds()), total
}
