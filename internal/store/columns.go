package store

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// The storage layout is derived once from flight's field table, whose hints
// mirror the migrations; schema tests prove the two agree.

// bookkeepingColumns precede the SIS columns in every main-row write.
var bookkeepingColumns = []string{"flid", "operation_day", "state_version", "last_message_id", "updated_at"}

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
