package flight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Keys of the canonical document that are not SIS field tags.
const (
	KeyFLID         = "FLID"
	KeyStateVersion = "STATE_VERSION"
	KeyOperationDay = "OPERATION_DAY"
	KeyUpdatedAt    = "UPDATED_AT"
	KeyDeleted      = "DELETED"
)

// UpdatedAtLayout is the UPDATED_AT format: RFC 3339 with nanoseconds as
// needed, always in UTC ("2026-09-09T02:15:00.123Z").
const UpdatedAtLayout = time.RFC3339Nano

// ErrKeyCollision is returned when a state would put two values under one key.
var ErrKeyCollision = errors.New("canonical JSON key collision")

// CanonicalJSON renders a flight's full state as the one document export,
// KAFKA_SCHD and the read API publish (processing rules R7.3): one JSON object, keys
// sorted bytewise at every level, HTML escaping off, no trailing newline.
// FLID is a string, STATE_VERSION a number, OPERATION_DAY is absent while
// unknown, UPDATED_AT is UpdatedAtLayout in UTC (absent when zero). Every
// present scalar appears under its tag with its original string; collections
// and records are arrays of objects in input order; anomalies are objects. A
// cleared field — empty scalar, empty list, empty anomaly — is an absent key;
// an empty item inside a list is left out, so no list shows {}.
// The same state always yields the same bytes.
func CanonicalJSON(s State) ([]byte, error) {
	return AppendCanonicalJSON(nil, s)
}

// AppendCanonicalJSON appends CanonicalJSON(s) to buf: the caller that
// writes more documents beside the state (the notice, the history's
// changes) renders them all into one buffer.
func AppendCanonicalJSON(buf []byte, s State) ([]byte, error) {
	if out, ok := appendCanonicalByTable(buf, &s); ok {
		return out, nil
	}
	return appendCanonicalSorted(buf, s)
}

// canonicalKey is one top-level key a state's document may hold, in the
// document's (bytewise) order: a mapped field (its index in fieldTable) or
// one of the bookkeeping keys (field < 0).
type canonicalKey struct {
	key   string
	field int
	kind  Kind
}

const (
	keyFLID = -1 - iota
	keyStateVersion
	keyOperationDay
	keyUpdatedAt
)

// canonicalKeys are the bookkeeping keys and every mapped field's tag,
// sorted bytewise: the order of a state document's keys.
var canonicalKeys = func() []canonicalKey {
	keys := []canonicalKey{{key: KeyFLID, field: keyFLID}, {key: KeyStateVersion, field: keyStateVersion},
		{key: KeyOperationDay, field: keyOperationDay}, {key: KeyUpdatedAt, field: keyUpdatedAt}}
	for i, f := range fieldTable {
		keys = append(keys, canonicalKey{key: f.Tag, field: i, kind: f.Kind})
	}
	slices.SortFunc(keys, func(a, b canonicalKey) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(keys); i++ {
		if keys[i].key == keys[i-1].key {
			panic("flight: a field tag collides with a bookkeeping key: " + keys[i].key)
		}
	}
	return keys
}()

// tagCodes are the mapped fields' tags (all four bytes) as big-endian
// numbers, ascending, so that a tag's number orders as its bytes do;
// tagKeys[i] is the position in canonicalKeys of the tag tagCodes[i].
var tagCodes, tagKeys = func() ([]uint32, []uint8) {
	var codes []uint32
	var keys []uint8
	for i, k := range canonicalKeys {
		if k.field < 0 {
			continue
		}
		if len(k.key) != 4 {
			panic("flight: a field tag is not four bytes: " + k.key)
		}
		codes = append(codes, tagCode(k.key))
		keys = append(keys, uint8(i))
	}
	if !slices.IsSorted(codes) || len(canonicalKeys) > 255 {
		panic("flight: field tags do not sort as their codes")
	}
	return codes, keys
}()

func tagCode(tag string) uint32 {
	return uint32(tag[0])<<24 | uint32(tag[1])<<16 | uint32(tag[2])<<8 | uint32(tag[3])
}

// canonicalKeyOf is the position in canonicalKeys of a mapped field's tag,
// or -1: a binary search of four-byte codes, no hashing.
func canonicalKeyOf(tag string) int {
	if len(tag) != 4 {
		return -1
	}
	c := tagCode(tag)
	if i, ok := slices.BinarySearch(tagCodes, c); ok {
		return int(tagKeys[i])
	}
	return -1
}

// The positions of the bookkeeping keys in canonicalKeys.
var bookkeepingKeys = func() (out [4]uint8) {
	for i, k := range canonicalKeys {
		if k.field < 0 {
			out[-1-k.field] = uint8(i)
		}
	}
	return out
}()

// canonicalEntry is one present field of a state: its position in
// canonicalKeys and its value (by its kind).
type canonicalEntry struct {
	str   string
	items []Item
	obj   Item
}

// appendCanonicalByTable renders the document from the keys the state's
// maps hold, each found in the table by its tag's code and rendered in the
// table's order: a flight holds a few dozen of the 74 fields, and looking
// each of the 74 up in its map cost more than the rendering. It reports
// false, having rendered nothing that counts, when a map holds a key that
// is not a mapped field of its kind (a state built by hand, an old row):
// the general path renders that, collisions and all.
func appendCanonicalByTable(buf []byte, s *State) ([]byte, bool) {
	n := 4 + len(s.Scalars) + len(s.Lists) + len(s.Anomalies)
	var entryStack [96]canonicalEntry
	var orderStack [96]uint16
	entries, order := entryStack[:0], orderStack[:0]
	if n > len(entryStack) {
		entries, order = make([]canonicalEntry, 0, n), make([]uint16, 0, n)
	}
	// order holds each entry's key position (high byte) and index (low).
	add := func(pos int, e canonicalEntry) {
		order = append(order, uint16(pos)<<8|uint16(len(entries))) //nolint:gosec // pos < 79, entries < 79: one per mapped field and bookkeeping key
		entries = append(entries, e)
	}
	for i := range bookkeepingKeys {
		add(int(bookkeepingKeys[i]), canonicalEntry{})
	}
	for tag, v := range s.Scalars {
		pos := canonicalKeyOf(tag)
		if pos < 0 || canonicalKeys[pos].kind != KindScalar {
			return buf, false
		}
		if v != "" {
			add(pos, canonicalEntry{str: v})
		}
	}
	for tag, items := range s.Lists {
		pos := canonicalKeyOf(tag)
		if pos < 0 || (canonicalKeys[pos].kind != KindCollection && canonicalKeys[pos].kind != KindRecord) {
			return buf, false
		}
		if len(items) > 0 {
			add(pos, canonicalEntry{items: items})
		}
	}
	for tag, obj := range s.Anomalies {
		pos := canonicalKeyOf(tag)
		if pos < 0 || canonicalKeys[pos].kind != KindAnomaly {
			return buf, false
		}
		if len(obj) > 0 {
			add(pos, canonicalEntry{obj: obj})
		}
	}
	slices.Sort(order)
	buf = append(buf, '{')
	first := true
	key := func(k string) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = AppendJSONString(buf, k)
		buf = append(buf, ':')
	}
	for _, o := range order {
		k, e := &canonicalKeys[o>>8], &entries[o&0xff]
		switch k.field {
		case keyFLID:
			key(k.key)
			buf = append(buf, '"')
			buf = strconv.AppendUint(buf, uint64(s.FLID), 10)
			buf = append(buf, '"')
			continue
		case keyStateVersion:
			key(k.key)
			buf = strconv.AppendInt(buf, s.StateVersion, 10)
			continue
		case keyOperationDay:
			if s.OperationDay != "" {
				key(k.key)
				buf = AppendJSONString(buf, s.OperationDay)
			}
			continue
		case keyUpdatedAt:
			if !s.UpdatedAt.IsZero() {
				key(k.key)
				buf = append(buf, '"')
				buf = s.UpdatedAt.UTC().AppendFormat(buf, UpdatedAtLayout)
				buf = append(buf, '"')
			}
			continue
		}
		switch k.kind {
		case KindScalar:
			key(k.key)
			buf = AppendJSONString(buf, e.str)
		case KindAnomaly:
			key(k.key)
			buf = appendObject(buf, e.obj)
		default:
			// The key, then the items that carry something; a list of
			// none is no key at all.
			at, wasFirst := len(buf), first
			key(k.key)
			buf = append(buf, '[')
			written := 0
			for _, it := range e.items {
				if len(it) == 0 {
					continue
				}
				if written > 0 {
					buf = append(buf, ',')
				}
				written++
				buf = appendObject(buf, it)
			}
			if written == 0 {
				buf, first = buf[:at], wasFirst
				continue
			}
			buf = append(buf, ']')
		}
	}
	return append(buf, '}'), true
}

// appendCanonicalSorted renders any state, whatever keys its maps hold:
// every present key collected and sorted, a key twice an error.
func appendCanonicalSorted(buf []byte, s State) ([]byte, error) {
	// Top-level keys: the bookkeeping ones, then every present field.
	type entry struct {
		key  string
		kind byte // 's' string, 'n' number, 'l' list, 'o' object
		str  string
		num  int64
		list []Item
		obj  Item
	}
	entries := make([]entry, 0, 4+len(s.Scalars)+len(s.Lists)+len(s.Anomalies))
	entries = append(entries, entry{key: KeyFLID, kind: 's', str: s.FLID.String()},
		entry{key: KeyStateVersion, kind: 'n', num: s.StateVersion})
	if s.OperationDay != "" {
		entries = append(entries, entry{key: KeyOperationDay, kind: 's', str: s.OperationDay})
	}
	if !s.UpdatedAt.IsZero() {
		entries = append(entries, entry{key: KeyUpdatedAt, kind: 's', str: s.UpdatedAt.UTC().Format(UpdatedAtLayout)})
	}
	for tag, v := range s.Scalars {
		if v != "" {
			entries = append(entries, entry{key: tag, kind: 's', str: v})
		}
	}
	for tag, items := range s.Lists {
		if items = nonEmptyItems(items); len(items) > 0 {
			entries = append(entries, entry{key: tag, kind: 'l', list: items})
		}
	}
	for tag, obj := range s.Anomalies {
		if len(obj) > 0 {
			entries = append(entries, entry{key: tag, kind: 'o', obj: obj})
		}
	}
	// Sorted by their indices: moving an entry (80 bytes, most of them
	// pointers) at every swap costs more than the whole render.
	order := make([]int32, len(entries))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(entries[a].key, entries[b].key) })
	for i := 1; i < len(order); i++ {
		if k := entries[order[i]].key; k == entries[order[i-1]].key {
			return nil, fmt.Errorf("%w: %q for FLID %s", ErrKeyCollision, k, s.FLID)
		}
	}
	buf = slices.Grow(buf, 256+64*len(entries))
	buf = append(buf, '{')
	for i, at := range order {
		e := &entries[at]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, e.key)
		buf = append(buf, ':')
		switch e.kind {
		case 's':
			buf = AppendJSONString(buf, e.str)
		case 'n':
			buf = strconv.AppendInt(buf, e.num, 10)
		case 'l':
			buf = append(buf, '[')
			for j, it := range e.list {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = appendObject(buf, it)
			}
			buf = append(buf, ']')
		case 'o':
			buf = appendObject(buf, e.obj)
		}
	}
	return append(buf, '}'), nil
}

// nonEmptyItems drops items that carry nothing. The decoder and Validate
// never let one into a state, but a row stored before an empty tag meant
// Clear (SIS §1.6.3) may still hold one: it is published as absent, never as
// {} or [{}]. The input is not modified.
func nonEmptyItems(items []Item) []Item {
	if !slices.ContainsFunc(items, func(it Item) bool { return len(it) == 0 }) {
		return items
	}
	out := make([]Item, 0, len(items))
	for _, it := range items {
		if len(it) > 0 {
			out = append(out, it)
		}
	}
	return out
}

// appendObject writes an item as a JSON object with sorted keys. The
// attributes are taken with their values as the map yields them and
// sorted by an insertion sort (an item has a handful): no second look-up
// of each value.
func appendObject(buf []byte, it Item) []byte {
	type attr struct{ k, v string }
	var stack [12]attr
	attrs := stack[:0]
	for k, v := range it {
		attrs = append(attrs, attr{k, v})
		for i := len(attrs) - 1; i > 0 && attrs[i].k < attrs[i-1].k; i-- {
			attrs[i], attrs[i-1] = attrs[i-1], attrs[i]
		}
	}
	buf = append(buf, '{')
	for i, a := range attrs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, a.k)
		buf = append(buf, ':')
		buf = AppendJSONString(buf, a.v)
	}
	return append(buf, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, quoted exactly as
// encoding/json does with HTML escaping off: ", \ and control characters
// escaped, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// TombstoneJSON renders the delete event value:
// {"DELETED":true,"FLID":"…","STATE_VERSION":N}.
func TombstoneJSON(flid FLID, stateVersion int64) ([]byte, error) {
	return encodeSorted(map[string]any{
		KeyDeleted:      true,
		KeyFLID:         flid.String(),
		KeyStateVersion: stateVersion,
	})
}

// encodeSorted relies on encoding/json writing map keys in sorted (bytewise)
// order; SetEscapeHTML(false) keeps "<", ">" and "&" literal.
func encodeSorted(doc map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
