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

// Defaults of the decode limits. They bound what one message may cost in
// memory, whatever its size in bytes: a few megabytes of XML can ask for
// hundreds of megabytes of element trees, attribute lists and item maps.
// The scanner enforces them while the tokens stream past, so a hostile
// message is DEAD before a large tree exists.
//
// A real AODB stays below them. The largest real message, a full-day DNLD
// of 9,999 fully populated flights (sistest.DNLD(9999), 31.5 MB), holds
// 1.28 M elements, 180 k attributes (3 at most on one element), 160 k
// collection and record items and no unmapped element; one of its records
// holds 128 elements and 16 items, 4 at most of one collection, and its
// longest value has 25 bytes. The limits on one element, record or value
// leave a margin of 20 to 600 times. The message-wide ones leave 1.5 to 2
// times: they are what bounds memory. That DNLD already peaks at about
// 230 MB (each element costs 100 to 200 bytes at peak, each item map about
// 450), and no message within these limits was measured above 250 MB
// (DecodeString; Decode adds its copy of the input).
const (
	// DefaultMaxElements bounds the elements of a message (1.56 × the
	// full-day DNLD).
	DefaultMaxElements = 2_000_000
	// DefaultMaxAttributes bounds the attributes of a message (2.2 × the
	// full-day DNLD).
	DefaultMaxAttributes = 400_000
	// DefaultMaxElementAttributes bounds the attributes of one element.
	DefaultMaxElementAttributes = 64
	// DefaultMaxRecordElements bounds the elements of one record (FLTR or
	// FLOP, also META and RECS), which is the tree held in memory at a time.
	DefaultMaxRecordElements = 10_000
	// DefaultMaxItems bounds the collection and record items (GTDT, SRVT, …)
	// of a message; each becomes a map (1.56 × the full-day DNLD).
	DefaultMaxItems = 250_000
	// DefaultMaxRecordItems bounds the items of one record.
	DefaultMaxRecordItems = 1_000
	// DefaultMaxCollectionItems bounds the items of one field (all the
	// GTDT of a record, …).
	DefaultMaxCollectionItems = 500
	// DefaultMaxRecords bounds the records of a message: FLTR of a SCHD
	// (whose RECS cannot exceed MaxRecs anyway), FLOP records, FDEL
	// deletions.
	DefaultMaxRecords = MaxRecs
	// DefaultMaxIgnored bounds the elements and attributes a message
	// carries that the module does not map (50 per record of a full-day
	// DNLD; 500 k distinct names cost about 100 MB).
	DefaultMaxIgnored = 500_000
	// DefaultMaxValueBytes bounds one text or attribute value (a scalar, an
	// item field, an anomaly's text): 4 × the 4,000 bytes an AODB's Oracle
	// VARCHAR2 column can hold.
	DefaultMaxValueBytes = 16 << 10
)

// DefaultLocation is the default airport zone, Asia/Shanghai. It is a fixed
// UTC+8 offset (China has had no daylight saving since 1991), so the codec
// needs no tzdata lookup; pass a loaded *time.Location for other airports.
var DefaultLocation = time.FixedZone("Asia/Shanghai", 8*60*60)

// Options bound and parameterise Decode. The zero value is usable: every
// limit left zero (or negative) takes its default.
type Options struct {
	// MaxBytes rejects larger messages with OVERSIZE before any parsing.
	MaxBytes int64
	// MaxDepth rejects deeper element nesting with TOO_DEEP.
	MaxDepth int
	// MaxElements rejects a message with more elements (TOO_MANY_ELEMENTS).
	MaxElements int
	// MaxAttributes rejects a message with more attributes in all
	// (TOO_MANY_ATTRIBUTES).
	MaxAttributes int
	// MaxElementAttributes rejects an element with more attributes
	// (TOO_MANY_ATTRIBUTES), counted in the raw tag before the tokenizer
	// builds the list.
	MaxElementAttributes int
	// MaxRecordElements rejects a record (FLTR, FLOP; also META, RECS) with
	// more elements (TOO_MANY_ELEMENTS).
	MaxRecordElements int
	// MaxItems rejects a message with more collection and record items
	// (TOO_MANY_ITEMS).
	MaxItems int
	// MaxRecordItems rejects a record with more items (TOO_MANY_ITEMS).
	MaxRecordItems int
	// MaxCollectionItems rejects a record with more items of one field
	// (TOO_MANY_ITEMS).
	MaxCollectionItems int
	// MaxRecords rejects a message with more records: FLTR (beyond MaxRecs
	// the reason stays RECS_OUT_OF_RANGE), FLOP, FDEL (TOO_MANY_RECORDS).
	MaxRecords int
	// MaxIgnored rejects a message with more unmapped elements and
	// attributes (TOO_MANY_IGNORED).
	MaxIgnored int
	// MaxValueBytes rejects a longer text or attribute value inside a
	// record or META (VALUE_TOO_LONG). Blank text is not a value.
	MaxValueBytes int
	// Location is the airport time zone for SIS local times and META times.
	Location *time.Location
	// Workers is how many goroutines may decode the records of one large
	// SCHD message in parallel: 0 = GOMAXPROCS (at most 4), 1 = sequential.
	// The result is the same either way.
	Workers int
	// DeferRecordsFrom (bytes; 0: never) makes a snapshot (DNLD, RESP) of
	// at least this size decode its records without keeping their
	// commands: the message is checked whole as always, but each Record
	// holds only its Index, FLID, Full and OperationDay, and
	// Message.LoadRecords decodes a run of them again, in full, when they
	// are applied. A full-day DNLD's decoded commands are three times its
	// 31.5 MB; deferred, they are held a chunk at a time. It applies to
	// bodies of the plain shape real feeds send (FLTR records only inside
	// SCHD, no comment, CDATA or processing instruction there); any other
	// body keeps its records as usual (Message.Deferred says which).
	DeferRecordsFrom int
	// SkipRefusedRecords (a skip-conflicts replay only) leaves out a
	// snapshot record (DNLD, RESP) the decoder refuses for its own content
	// instead of refusing the message, when the record carries a readable
	// FLID: Message.Refused lists each with its refusal. A duplicate FLID or
	// a limit still refuses the message; RECS counts the refused records
	// too. Such a message is decoded sequentially and never deferred.
	SkipRefusedRecords bool
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	orDefault(&o.MaxDepth, DefaultMaxDepth)
	orDefault(&o.MaxElements, DefaultMaxElements)
	orDefault(&o.MaxAttributes, DefaultMaxAttributes)
	orDefault(&o.MaxElementAttributes, DefaultMaxElementAttributes)
	orDefault(&o.MaxRecordElements, DefaultMaxRecordElements)
	orDefault(&o.MaxItems, DefaultMaxItems)
	orDefault(&o.MaxRecordItems, DefaultMaxRecordItems)
	orDefault(&o.MaxCollectionItems, DefaultMaxCollectionItems)
	orDefault(&o.MaxRecords, DefaultMaxRecords)
	orDefault(&o.MaxIgnored, DefaultMaxIgnored)
	orDefault(&o.MaxValueBytes, DefaultMaxValueBytes)
	if o.Location == nil {
		o.Location = DefaultLocation
	}
	return o
}

func orDefault(limit *int, def int) {
	if *limit <= 0 {
		*limit = def
	}
}
