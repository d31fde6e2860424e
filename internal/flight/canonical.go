package flight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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
// KAFKA_SCHD and the read API publish (SPEC §3.3): one JSON object, keys
// sorted bytewise at every level, HTML escaping off, no trailing newline.
// FLID is a string, STATE_VERSION a number, OPERATION_DAY is absent while
// unknown, UPDATED_AT is UpdatedAtLayout in UTC (absent when zero). Every
// present scalar appears under its tag with its original string; collections
// and records are arrays of objects in input order; anomalies are objects. A
// cleared field — empty scalar, empty list, empty anomaly — is an absent key.
// The same state always yields the same bytes.
func CanonicalJSON(s State) ([]byte, error) {
	doc := make(map[string]any, 4+len(s.Scalars)+len(s.Lists)+len(s.Anomalies))
	doc[KeyFLID] = s.FLID.String()
	doc[KeyStateVersion] = s.StateVersion
	if s.OperationDay != "" {
		doc[KeyOperationDay] = s.OperationDay
	}
	if !s.UpdatedAt.IsZero() {
		doc[KeyUpdatedAt] = s.UpdatedAt.UTC().Format(UpdatedAtLayout)
	}
	put := func(key string, v any) error {
		if _, taken := doc[key]; taken {
			return fmt.Errorf("%w: %q for FLID %s", ErrKeyCollision, key, s.FLID)
		}
		doc[key] = v
		return nil
	}
	for tag, v := range s.Scalars {
		if v == "" {
			continue
		}
		if err := put(tag, v); err != nil {
			return nil, err
		}
	}
	for tag, items := range s.Lists {
		if len(items) == 0 {
			continue
		}
		list := make([]map[string]string, len(items))
		for i, it := range items {
			list[i] = nonNil(it)
		}
		if err := put(tag, list); err != nil {
			return nil, err
		}
	}
	for tag, obj := range s.Anomalies {
		if len(obj) == 0 {
			continue
		}
		if err := put(tag, map[string]string(obj)); err != nil {
			return nil, err
		}
	}
	return encodeSorted(doc)
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

func nonNil(it Item) map[string]string {
	if it == nil {
		return map[string]string{}
	}
	return it
}
