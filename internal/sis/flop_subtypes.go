package sis

import (
	"slices"
	"strings"
)

// CollectionMode is how the collections a FLOP subtype carries apply to the
// stored state.
type CollectionMode uint8

// Collection modes.
const (
	// CollectionsReplace: a carried collection replaces the stored one as a
	// whole (processing rules R10.6; all-"0" items clear it). The only mode the seeds
	// define; a subtype confirmed to carry only changed items gets a new
	// mode here and a one-line edit in flopSubtypes.
	CollectionsReplace CollectionMode = iota + 1
)

// FlopSubtype is one FLOP subtype: the field(s) it is about (its subject).
// A FLOP message of a subtype gives the AODB's current value of each of its
// subject fields: a subject field the record carries is Set (Replace for a
// collection; empty = Clear, as everywhere), and a subject field the record
// does not carry is Cleared — the interface's rule that an optional field
// left out means "the AODB has no value" (processing rules R5.4, SIS §3.16.1 note
// 4), which the AODB's own consumer applies to every subtype (a STYP=TOBT
// without TOBT clears TOBT; an HNAG without PHAG clears PHAG). Any other
// mapped field the record carries (FFID, SODT, …) is applied with increment
// semantics: absent = unchanged (processing rules R5.4).
type FlopSubtype struct {
	Styp string
	// Fields are the subject fields, every one a field of flight.Fields
	// (TestFlopSubtypeFieldsAreFlightFields).
	Fields      []string
	Collections CollectionMode
	// Delete marks FDEL: the record names a FLID to delete.
	Delete bool
}

func sub(styp string, fields ...string) FlopSubtype {
	if len(fields) == 0 {
		fields = []string{styp}
	}
	return FlopSubtype{Styp: styp, Fields: fields, Collections: CollectionsReplace}
}

// flopSubtypes is THE table of FLOP subtypes (processing rules R6, R5.4;
// R10.6, R2.1): every mapped field is its own subtype, the grouped subtypes
// carry the fields of their group (a subtype names a group, not a field),
// plus FDEL. docs/processing-rules.md lists them (TestProcessingRulesListEveryFlopSubtype).
var flopSubtypes = map[string]FlopSubtype{
	// Deletion (SIS §3.29).
	StypFDEL: {Styp: StypFDEL, Delete: true},

	// Collections: the carried list replaces the stored one.
	"GTDT": sub("GTDT"),
	"CKDT": sub("CKDT"),
	"CLDT": sub("CLDT"),
	"PSDT": sub("PSDT"),
	"CHDT": sub("CHDT"),
	"DELY": sub("DELY"),
	"ABTM": sub("ABTM"),
	"CHOT": sub("CHOT"),
	"ROUT": sub("ROUT"),
	"ERUT": sub("ERUT"),

	// Anomalies: object Set, empty object Clear.
	"FDIV": sub("FDIV"),
	"FRET": sub("FRET"),
	"FLAB": sub("FLAB"),

	// Text and grouped records: Replace on presence.
	"SRVT": sub("SRVT"),
	"VIPF": sub("VIPF"),
	"MAFL": sub("MAFL"),
	"PSHT": sub("PSHT"),
	"TIPT": sub("TIPT"),
	"PORT": sub("PORT"),

	// Grouped subtypes: the subtype names a group of fields, none of which
	// is called after it (the interface's handling agents, external status
	// and VIP subtypes). Each member follows the subject rule on its own:
	// an HNAG carrying only FHAG sets FHAG and clears PHAG and MHAG.
	"HNAG": sub("HNAG", "FHAG", "PHAG", "MHAG"), // handling agents: flight, passenger, maintenance
	"EXSS": sub("EXSS", "EXSC", "EXSR"),         // external status: code and remark
	"VIPP": sub("VIPP", "VIPP", "VIPR"),         // VIP passengers: count and rating

	// Cancellation: a scalar Set of CNCL (a SIS time).
	"CNCL": sub("CNCL"),

	// Single-value kinds: a scalar Set (empty = Clear).
	"FFID": sub("FFID"), "ALCD": sub("ALCD"), "ALSC": sub("ALSC"), "FLNO": sub("FLNO"),
	"MVIN": sub("MVIN"), "SODT": sub("SODT"), "FLTY": sub("FLTY"), "FLIN": sub("FLIN"),
	"ACFT": sub("ACFT"), "RENO": sub("RENO"), "TAOP": sub("TAOP"), "TAFL": sub("TAFL"),
	"TAID": sub("TAID"), "TRML": sub("TRML"), "MAXP": sub("MAXP"), "CSOP": sub("CSOP"),
	"CSFT": sub("CSFT"), "MAID": sub("MAID"), "ESTT": sub("ESTT"), "ACTT": sub("ACTT"),
	"STND": sub("STND"), "PHAG": sub("PHAG"), "FHAG": sub("FHAG"), "MHAG": sub("MHAG"),
	"REMC": sub("REMC"), "BOTM": sub("BOTM"), "LACL": sub("LACL"), "FINT": sub("FINT"),
	"APPT": sub("APPT"), "EGSR": sub("EGSR"), "EGST": sub("EGST"),
	"VIPR": sub("VIPR"), "LBNO": sub("LBNO"), "LBWT": sub("LBWT"), "PAXC": sub("PAXC"),
	"EXSC": sub("EXSC"), "EXSR": sub("EXSR"), "FTSS": sub("FTSS"),
	"PEDT": sub("PEDT"), "NEAT": sub("NEAT"), "PADT": sub("PADT"), "NAAT": sub("NAAT"),
	"STDT": sub("STDT"), "EDDT": sub("EDDT"), "DYOP": sub("DYOP"), "SCHT": sub("SCHT"),
	"COBT": sub("COBT"), "TOBT": sub("TOBT"), "EOBT": sub("EOBT"), "CTOT": sub("CTOT"),
	"IEST": sub("IEST"), "RUNW": sub("RUNW"),
}

// LookupFlopSubtype returns the table entry for a FLOP STYP.
func LookupFlopSubtype(styp string) (FlopSubtype, bool) {
	s, ok := flopSubtypes[styp]
	return s, ok
}

// FlopSubtypes returns every FLOP subtype, sorted by STYP (for
// documentation and exhaustive tests).
func FlopSubtypes() []FlopSubtype {
	out := make([]FlopSubtype, 0, len(flopSubtypes))
	for _, s := range flopSubtypes {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b FlopSubtype) int { return strings.Compare(a.Styp, b.Styp) })
	return out
}
