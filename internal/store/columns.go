package store

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// The storage layout is derived once from flight's field table, whose hints
// mirror the migrations; schema tests prove the two agree.

// childTable is one of the nine child tables and the collection(s) it holds.
type childTable struct {
	name string
	// fields stored here: one, or ROUT and ERUT for flight_route_point.
	fields []flight.FieldSpec
	// itemColumns are the item keys with their own column, then text.
	itemColumns []string
	textColumn  string
	routeKind   bool
}

// columns returns the insert column list of the table.
func (c childTable) columns() []string {
	cols := []string{"flid"}
	if c.routeKind {
		cols = append(cols, "route_kind")
	}
	cols = append(cols, "ordinal", "source_seq")
	for _, k := range c.itemColumns {
		cols = append(cols, strings.ToLower(k))
	}
	if c.textColumn != "" {
		cols = append(cols, c.textColumn)
	}
	return append(cols, "attrs", "record_version")
}

var childTables = func() []childTable {
	var out []childTable
	byName := map[string]int{}
	for _, f := range flight.Fields() {
		if f.Kind != flight.KindCollection {
			continue
		}
		if i, ok := byName[f.Table]; ok {
			out[i].fields = append(out[i].fields, f)
			continue
		}
		byName[f.Table] = len(out)
		out = append(out, childTable{name: f.Table, fields: []flight.FieldSpec{f},
			itemColumns: f.ItemColumns, textColumn: f.TextColumn, routeKind: f.RouteKind != ""})
	}
	return out
}()

// splitItem separates an item into its column values (in itemColumns order,
// then text; nil where the key is absent), its sequence attribute and the
// remaining keys as JSON. Nothing is dropped: every key lands somewhere.
func splitItem(it flight.Item, seqAttr string, itemColumns []string, textColumn string) (cols []*string, seq *string, attrs []byte, err error) {
	take := func(key string) *string {
		if v, ok := it[key]; ok {
			return &v
		}
		return nil
	}
	placed := 0
	if seqAttr != "" {
		if seq = take(seqAttr); seq != nil {
			placed++
		}
	}
	cols = make([]*string, 0, len(itemColumns)+1)
	for _, k := range itemColumns {
		v := take(k)
		if v != nil {
			placed++
		}
		cols = append(cols, v)
	}
	if textColumn != "" {
		v := take(flight.TextKey)
		if v != nil {
			placed++
		}
		cols = append(cols, v)
	}
	if placed == len(it) {
		return cols, seq, emptyAttrs, nil // the common case: every key has a column
	}
	rest := make(map[string]string, len(it)-placed)
	for k, v := range it {
		if !hasColumn(k, seqAttr, itemColumns, textColumn) {
			rest[k] = v
		}
	}
	attrs, err = json.Marshal(rest)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("encode item attributes: %w", err)
	}
	return cols, seq, attrs, nil
}

var emptyAttrs = []byte("{}")

func hasColumn(key, seqAttr string, itemColumns []string, textColumn string) bool {
	if (seqAttr != "" && key == seqAttr) || (textColumn != "" && key == flight.TextKey) {
		return true
	}
	for _, c := range itemColumns {
		if c == key {
			return true
		}
	}
	return false
}

// joinItem is splitItem's inverse.
func joinItem(cols []*string, seqAttr string, seq *string, itemColumns []string, textColumn string, attrs []byte) (flight.Item, error) {
	it := flight.Item{}
	if len(attrs) > 0 {
		if err := json.Unmarshal(attrs, &it); err != nil {
			return nil, fmt.Errorf("decode item attributes: %w", err)
		}
	}
	if seqAttr != "" && seq != nil {
		it[seqAttr] = *seq
	}
	keys := itemColumns
	if textColumn != "" {
		keys = append(append([]string(nil), itemColumns...), flight.TextKey)
	}
	for i, k := range keys {
		if cols[i] != nil {
			it[k] = *cols[i]
		}
	}
	return it, nil
}

// slotKind says how one flight_schd column maps to the state.
type slotKind uint8

const (
	slotScalar      slotKind = iota + 1 // text column = Scalars[tag]
	slotTypedTime                       // derived UTC instant, written only
	slotAnomalyCol                      // text column = Anomalies[tag][key]
	slotAnomalyRest                     // jsonb: the anomaly's other keys
	slotRecord                          // text column: canonical JSON array of items
)

type slot struct {
	column string
	kind   slotKind
	field  flight.FieldSpec
	key    string // anomaly item key for slotAnomalyCol
}

// mainSlots is the flight_schd layout after the bookkeeping columns.
var mainSlots = func() []slot {
	var out []slot
	for _, f := range flight.Fields() {
		switch f.Kind {
		case flight.KindScalar:
			out = append(out, slot{column: f.Column, kind: slotScalar, field: f})
			if f.TypedTimeColumn != "" {
				out = append(out, slot{column: f.TypedTimeColumn, kind: slotTypedTime, field: f})
			}
		case flight.KindAnomaly:
			for _, k := range f.ItemColumns {
				out = append(out, slot{column: f.Column + "_" + strings.ToLower(k), kind: slotAnomalyCol, field: f, key: k})
			}
			out = append(out, slot{column: f.TextColumn, kind: slotAnomalyCol, field: f, key: flight.TextKey})
			out = append(out, slot{column: f.Column + "_attrs", kind: slotAnomalyRest, field: f})
		case flight.KindRecord:
			out = append(out, slot{column: f.Column, kind: slotRecord, field: f})
		}
	}
	return out
}()

// readSlots are the mainSlots a read needs (derived columns are not state).
var readSlots = func() []slot {
	var out []slot
	for _, s := range mainSlots {
		if s.kind != slotTypedTime {
			out = append(out, s)
		}
	}
	return out
}()

func columnList(slots []slot) string {
	cols := make([]string, len(slots))
	for i, s := range slots {
		cols[i] = s.column
	}
	return strings.Join(cols, ", ")
}
