package flight

// Kind says how a SIS field is stored and merged.
type Kind uint8

// The four field kinds (processing rules R5.4, R2.1).
const (
	// KindScalar holds one original string (main-table column).
	KindScalar Kind = iota + 1
	// KindCollection holds []Item, one item per repeated element, replaced
	// as a whole; items may carry a sequence attribute ("0" = clear marker).
	KindCollection
	// KindAnomaly holds one Item (attributes plus TEXT); empty = Clear.
	KindAnomaly
	// KindRecord holds []Item, one per non-empty occurrence (text records
	// SRVT/VIPF/MAFL and grouped records PSHT/TIPT/PORT); presence is Replace,
	// an empty tag (SIS §1.6.3) or absence in a full snapshot is Clear.
	KindRecord
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindScalar:
		return "scalar"
	case KindCollection:
		return "collection"
	case KindAnomaly:
		return "anomaly"
	case KindRecord:
		return "record"
	default:
		return "unknown"
	}
}

// FieldSpec describes one SIS field tag. The storage hints mirror the
// migrations (flight_schd and the nine child tables); the store may use them
// to map fields to columns without a second table of its own.
type FieldSpec struct {
	Tag  string
	Kind Kind
	// SeqAttr names the item's sequence attribute (collections only; "" for
	// DELY, which has none). The value stays in the Item under this key.
	SeqAttr string
	// Table is the storage table: "flight_schd" for scalars, anomalies and
	// records; the child table for collections.
	Table string
	// Column is the main-table column for scalars and records, or the column
	// prefix (without trailing underscore) for anomalies.
	Column string
	// RouteKind is the route_kind discriminator for ROUT/ERUT.
	RouteKind string
	// ItemColumns are the item keys (collections, anomalies) that have their
	// own column; every other key goes to the attrs JSON.
	ItemColumns []string
	// TextColumn is the column that holds an item's TEXT, when it has one.
	TextColumn string
	// TypedTimeColumn is the derived UTC column for the few scalars the module
	// itself needs as instants (processing rules R10.9); such values must parse as SIS
	// local time when present.
	TypedTimeColumn string
}

// Item is one collection item, record occurrence or anomaly object: every
// attribute and child element, known or not, as a string field. The sequence
// attribute is a key like any other ("GTNO":"1"); the element's own character
// text is under TextKey.
type Item map[string]string

// TextKey is the Item key that holds an element's character text.
const TextKey = "TEXT"

// Clone returns a copy of the item that shares nothing with it.
func (it Item) Clone() Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = v
	}
	return out
}

// CloneItems deep-copies a list of items.
func CloneItems(items []Item) []Item {
	if items == nil {
		return nil
	}
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = it.Clone()
	}
	return out
}

func scalar(tag string) FieldSpec {
	return FieldSpec{Tag: tag, Kind: KindScalar, Table: "flight_schd", Column: lower(tag)}
}

func timedScalar(tag string) FieldSpec {
	f := scalar(tag)
	f.TypedTimeColumn = f.Column + "_utc"
	return f
}

func collection(tag, seqAttr, table string, itemColumns ...string) FieldSpec {
	return FieldSpec{Tag: tag, Kind: KindCollection, SeqAttr: seqAttr, Table: table, ItemColumns: itemColumns}
}

func route(tag string) FieldSpec {
	f := collection(tag, "RTNO", "flight_route_point", "APCD", "SCAT", "SCDT")
	f.RouteKind = tag
	return f
}

func anomaly(tag string, itemColumns ...string) FieldSpec {
	return FieldSpec{Tag: tag, Kind: KindAnomaly, Table: "flight_schd", Column: lower(tag),
		ItemColumns: itemColumns, TextColumn: lower(tag) + "_text"}
}

func record(tag string) FieldSpec {
	return FieldSpec{Tag: tag, Kind: KindRecord, Table: "flight_schd", Column: lower(tag) + "_text"}
}

// fieldTable is THE table of SIS fields the module maps (processing rules R2.1 plus EXSS).
// FLID is not here: it is the identity, not a field. Order is the canonical
// order of commands.
var fieldTable = []FieldSpec{
	scalar("FFID"), scalar("ALCD"), scalar("ALSC"), scalar("FLNO"), scalar("MVIN"),
	timedScalar("SODT"), scalar("FLTY"), scalar("FLIN"), scalar("ACFT"), scalar("RENO"),
	scalar("TAOP"), scalar("TAFL"), scalar("TAID"), scalar("TRML"), scalar("MAXP"),
	scalar("CSOP"), scalar("CSFT"), scalar("MAID"), scalar("ESTT"), scalar("ACTT"),
	scalar("STND"), scalar("PHAG"), scalar("FHAG"), scalar("MHAG"), timedScalar("CNCL"),
	scalar("REMC"), scalar("BOTM"), scalar("LACL"), scalar("FINT"), scalar("APPT"),
	scalar("EGSR"), scalar("EGST"), scalar("VIPP"), scalar("VIPR"), scalar("LBNO"),
	scalar("LBWT"), scalar("PAXC"), scalar("EXSC"), scalar("EXSR"), scalar("EXSS"),
	scalar("FTSS"), scalar("PEDT"), timedScalar("NEAT"), scalar("PADT"), timedScalar("NAAT"),
	scalar("STDT"), scalar("EDDT"), scalar("DYOP"), scalar("SCHT"), scalar("COBT"),
	scalar("TOBT"), scalar("EOBT"), scalar("CTOT"), scalar("IEST"), scalar("RUNW"),

	collection("GTDT", "GTNO", "flight_gate", "GATE", "PGOT", "PGCT", "GOTM", "GCTM", "GTYP"),
	collection("CKDT", "CKNO", "flight_checkin", "CHKC", "CCLS", "PCOT", "PCCT", "COTM", "CCTM", "CTYP"),
	collection("CLDT", "CLNO", "flight_belt"),
	collection("PSDT", "PSNO", "flight_stand_plan", "PSST", "STST", "STET"),
	collection("CHDT", "CHNO", "flight_chute"),
	withText(collection("DELY", "", "flight_delay", "CODE", "STRT", "DURA"), "comment"),
	collection("ABTM", "ASNO", "flight_bridge_op", "ABDG", "ABOP", "AOTM"),
	collection("CHOT", "CSNO", "flight_chock_op", "CHTM", "CHID", "CHST"),
	route("ROUT"),
	route("ERUT"),

	anomaly("FDIV", "DDES", "DDIR"),
	anomaly("FRET"),
	anomaly("FLAB"),

	record("SRVT"), record("VIPF"), record("MAFL"),
	record("PSHT"), record("TIPT"), record("PORT"),
}

func withText(f FieldSpec, column string) FieldSpec {
	f.TextColumn = column
	return f
}

var fieldIndex = func() map[string]int {
	idx := make(map[string]int, len(fieldTable))
	for i, f := range fieldTable {
		if _, dup := idx[f.Tag]; dup {
			panic("flight: duplicate field tag " + f.Tag)
		}
		idx[f.Tag] = i
	}
	return idx
}()

// Lookup returns the spec of a mapped field tag.
func Lookup(tag string) (FieldSpec, bool) {
	i, ok := fieldIndex[tag]
	if !ok {
		return FieldSpec{}, false
	}
	return fieldTable[i], true
}

// Fields returns every mapped field in canonical order (a copy).
func Fields() []FieldSpec {
	out := make([]FieldSpec, len(fieldTable))
	copy(out, fieldTable)
	return out
}

// FieldOrder returns the canonical position of tag, or -1 if unmapped.
func FieldOrder(tag string) int {
	i, ok := fieldIndex[tag]
	if !ok {
		return -1
	}
	return i
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
