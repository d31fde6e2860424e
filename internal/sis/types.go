package sis

// Message TYPE and STYP values the module knows.
const (
	TypeSCHD = "SCHD"
	TypeFLOP = "FLOP"
	TypeRQFD = "RQFD"

	StypDNLD = "DNLD"
	StypRESP = "RESP"
	StypADFT = "ADFT"
	StypFDEL = "FDEL"
	StypNONE = "NONE"
)

// schdSubtypes maps SCHD subtypes to their kind.
var schdSubtypes = map[string]Kind{
	StypDNLD: KindSnapshot,
	StypRESP: KindSnapshot,
	StypADFT: KindADFT,
}

// referenceTypes are reference-data messages (SIS §3.1–3.15): recognised,
// reported UNSUPPORTED_TYPE, never decoded further. The list holds the types
// seen in real feeds; an unlisted one is UNKNOWN_TYPE (same failure class).
var referenceTypes = map[string]bool{
	"ARPT": true, // airports
	"AIRC": true, // aircraft types
	"REGN": true, // registrations
	"ORGN": true, // organisations / airlines
	"GLST": true, // gates
	"CLST": true, // check-in counters
	"BLST": true, // baggage belts
	"VIPS": true, // VIP services
	"VIPL": true, // VIP lounges
}
