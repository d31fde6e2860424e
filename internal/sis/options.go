package sis

import "time"

// Defaults for Options fields left zero.
const (
	// DefaultMaxBytes bounds a raw message (64 MiB). The protocol's own
	// ceiling is 10 MB per SCHD; the margin covers pretty-printed feeds.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxDepth bounds element nesting. Real SIS nests five deep
	// (MSG/SCHD/FLTR/GTDT/GATE).
	DefaultMaxDepth = 32
)

// DefaultLocation is the default airport zone, Asia/Shanghai. It is a fixed
// UTC+8 offset (China has had no daylight saving since 1991), so the codec
// needs no tzdata lookup; pass a loaded *time.Location for other airports.
var DefaultLocation = time.FixedZone("Asia/Shanghai", 8*60*60)

// Options bound and parameterise Decode. The zero value is usable.
type Options struct {
	// MaxBytes rejects larger messages with OVERSIZE before any parsing.
	MaxBytes int64
	// MaxDepth rejects deeper element nesting with TOO_DEEP.
	MaxDepth int
	// Location is the airport time zone for SIS local times and META times.
	Location *time.Location
	// Workers is how many goroutines may decode the records of one large
	// SCHD message in parallel: 0 = GOMAXPROCS (at most 4), 1 = sequential.
	// The result is the same either way.
	Workers int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.Location == nil {
		o.Location = DefaultLocation
	}
	return o
}
