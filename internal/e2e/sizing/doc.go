// Package sizing owns the memory tests of `flightfeed pump --drain` as it
// ships: the built binary runs inside a memory cgroup of the chart's
// default limit (512 MiB), with the soft memory limit it derives from the
// cgroup, through the largest messages the decoder admits and a backlog of
// full-day DNLDs, and must drain it without being OOM-killed; and through
// one full-day DNLD of 9,999 fully populated flights (31.5 MB) alone, whose
// peak RSS (the process's high-water mark) must stay at or below 300 MB.
// The tests print the peak RSS they measured. The package holds tests
// only; it must not be imported.
package sizing
