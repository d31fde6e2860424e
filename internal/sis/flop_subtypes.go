package sis

// CollectionMode is how the collections a FLOP subtype carries apply to the
// stored state.
type CollectionMode uint8

// Collection modes.
const (
	// CollectionsReplace: a carried collection replaces the stored one as a
	// whole (SPEC §2.6; all-"0" items clear it). The only mode the seeds
	// define; a subtype confirmed to carry only changed items gets a new
	// mode here and a one-line edit in flopSubtypes.
	CollectionsReplace CollectionMode = iota + 1
)

// FlopSubtype is one FLOP subtype: the field(s) it carries. A FLOP record
// must carry at least one of Fields (its subject); any other mapped field it
// carries (FFID, SODT, …) is applied too, with increment semantics.
type FlopSubtype struct {
	Styp        string
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

// flopSubtypes is THE table of FLOP subtypes (seeds 000 §6, 001 §6; SPEC
// §2.6, §3.1): every mapped field is its own subtype, plus FDEL.
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
	"APPT": sub("APPT"), "EGSR": sub("EGSR"), "EGST": sub("EGST"), "VIPP": sub("VIPP"),
	"VIPR": sub("VIPR"), "LBNO": sub("LBNO"), "LBWT": sub("LBWT"), "PAXC": sub("PAXC"),
	"EXSC": sub("EXSC"), "EXSR": sub("EXSR"), "EXSS": sub("EXSS"), "FTSS": sub("FTSS"),
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
