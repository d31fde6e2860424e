// Package sis owns the SIS wire format of the AODB interface: it decodes one
// raw mailbox message into a typed Message (META plus per-record
// flight.Commands), rejects bad input with a typed *Error that carries a
// machine-readable Reason, the offending element path and the failure class
// (Illegal → DEAD, Unsupported → FAILED(UNSUPPORTED)), and encodes the
// outbound requests (RQFD, full-day flight data; RQRD, a whole
// reference-data list). An Error renders on one line (control characters
// escaped), since its text becomes the mailbox note.
//
// Input is UTF-8; a leading byte order mark is dropped. Bytes that are not
// valid UTF-8 are read in the encoding the XML declaration names (GBK,
// GB2312, GB18030, ISO-8859-1, windows-1252), or rejected as BAD_ENCODING.
//
// Decoding streams tokens (its own tokenizer, exactly encoding/xml's strict
// RawToken over the input string, names and values substrings of it) and
// holds one record's element tree at a time; a large SCHD body is cut at <FLTR> boundaries and decoded on up
// to Options.Workers goroutines, with a sequential fallback that makes the
// outcome (message or error) identical either way. With
// Options.DeferRecordsFrom, a snapshot of at least that many bytes is
// checked whole but keeps only each record's index, FLID and day
// (Message.Deferred); Message.LoadRecords decodes a run of records again,
// in full, when the caller applies them, so a full-day DNLD's commands
// (about three times its 31.5 MB) are never all in memory.
//
// What a message may cost is bounded, whatever its size in bytes: Options
// limit the elements and attributes of the message, the attributes of one
// element (counted in the raw tag, before the tokenizer builds the list), the
// elements and items of one record, the items of one field and of the
// message, the records, the unmapped elements and attributes, and the
// length of a value; every META field is at most MaxMetaFieldChars
// characters. The limits are checked while tokens stream, so an oversized
// message is DEAD (TOO_MANY_*, VALUE_TOO_LONG, META_FIELD_TOO_LONG) before a
// large tree exists. The defaults (options.go) admit a full-day DNLD of
// 9,999 fully populated flights with a margin and keep the decode of any
// message they admit near 250 MB at peak; memory otherwise grows with the
// input, so Options.MaxBytes (the pump's mailbox.maxMessageBytes) is the
// other half of the bound.
//
// It is pure: no database, no network, no logging, no clock, no file access
// (the default airport zone is a fixed UTC+8 offset, not a tzdata lookup). It
// imports only internal/flight of the project (and golang.org/x/text for
// the declared encodings). It never panics on any input; FuzzDecode keeps it
// honest.
package sis
