package sis

import (
	"slices"
	"strings"
)

// Message TYPE and STYP values the module knows.
const (
	TypeSCHD = "SCHD"
	TypeFLOP = "FLOP"
	TypeRQFD = "RQFD"
	TypeRQRD = "RQRD"

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

// ReferenceKind is one type of the interface's reference data (SIS
// §3.1–3.15): the lists the AODB keeps of airlines, airports, gates, …,
// sent as TYPE=<Type> with STYP DNLD or RESP (the whole list), ADD, UPD or
// DEL, each record an element named Type directly under MSG.
type ReferenceKind struct {
	// Type is the SIS TYPE and the record element's name.
	Type string `json:"type"`
	// Name is the list's name in the read API and `ref` (airlines, gates).
	Name string `json:"name"`
	// Key are the elements whose value identifies a record, by preference:
	// the first one a record carries non-blank is its key. Where two are
	// given they are the IATA and the ICAO code, whose lengths differ (2 and
	// 3 letters for an airline, 3 and 4 for an airport, a city or an
	// aircraft type), so one namespace holds both without a collision.
	Key []string `json:"key"`
	// Lists are the record's children that may repeat: always arrays in
	// the stored record, however many a record carries.
	Lists []string `json:"lists,omitempty"`
	// Title says what the list holds, for documentation.
	Title string `json:"title"`
}

// referenceKinds is THE catalogue of reference-data types, from the
// interface's definitions (the record children are in
// docs/processing-rules.md). The keys are the ones the AODB's own consumer
// looks records up by (airlines by ITOP, gates by GCOD, registrations by
// RNUM) or that a DEL carries alone (airports ITCD, VIPs VPCD): each type's
// code element.
var referenceKinds = map[string]ReferenceKind{
	"AIRL": {Type: "AIRL", Name: "airlines", Key: []string{"ITOP", "ICOP"}, Lists: []string{"TRML", "OGRP", "SUBC"}, Title: "airlines (IATA, ICAO code, names, country, terminals, alliances, subcompanies)"},
	"ARPT": {Type: "ARPT", Name: "airports", Key: []string{"ITCD", "ICCD"}, Lists: []string{"ABBR"}, Title: "airports (IATA, ICAO code, names, distance, country, city, type, haul)"},
	"CITY": {Type: "CITY", Name: "cities", Key: []string{"ITCD", "ICCD"}, Lists: []string{"ABBR"}, Title: "cities"},
	"COUL": {Type: "COUL", Name: "countries", Key: []string{"COUC"}, Lists: []string{"REGC"}, Title: "countries and their regions"},
	"REGL": {Type: "REGL", Name: "regions", Key: []string{"REGC"}, Title: "regions"},
	"AIRC": {Type: "AIRC", Name: "aircraft-types", Key: []string{"ITAT", "ICAT"}, Title: "aircraft types (IATA, ICAO type, seats, weights, dimensions)"},
	"REGN": {Type: "REGN", Name: "registrations", Key: []string{"RNUM"}, Title: "aircraft registrations (type, owner, call sign, seats, weights)"},
	"ORGN": {Type: "ORGN", Name: "organisations", Key: []string{"OGID"}, Lists: []string{"OCAT"}, Title: "organisations: handling agents (the ids FLOP HNAG's FHAG, PHAG, MHAG name)"},
	"HLTR": {Type: "HLTR", Name: "handling-transactions", Key: []string{"HLTC"}, Title: "handling transactions"},
	"TLST": {Type: "TLST", Name: "terminals", Key: []string{"TCOD"}, Title: "terminals"},
	"GLST": {Type: "GLST", Name: "gates", Key: []string{"GCOD"}, Title: "gates"},
	"SLST": {Type: "SLST", Name: "stands", Key: []string{"SCOD"}, Title: "stands"},
	"PLST": {Type: "PLST", Name: "piers", Key: []string{"PCOD"}, Title: "piers"},
	"BLST": {Type: "BLST", Name: "belts", Key: []string{"BCOD"}, Title: "baggage belts (reclaim carousels)"},
	"CLST": {Type: "CLST", Name: "checkin-counters", Key: []string{"CCOD"}, Title: "check-in counters"},
	"CHLT": {Type: "CHLT", Name: "chutes", Key: []string{"CCOD"}, Title: "baggage chutes"},
	"DLYL": {Type: "DLYL", Name: "delay-codes", Key: []string{"DCOD"}, Title: "delay codes"},
	"FLTL": {Type: "FLTL", Name: "flight-types", Key: []string{"FTYP"}, Title: "flight types"},
	"ABNR": {Type: "ABNR", Name: "abnormal-reasons", Key: []string{"ANRC"}, Title: "abnormal-operation reasons"},
	"STTS": {Type: "STTS", Name: "flight-statuses", Key: []string{"STTC"}, Title: "flight statuses"},
	"VIPL": {Type: "VIPL", Name: "vip-persons", Key: []string{"VPCD"}, Title: "VIP persons"},
	"VIPS": {Type: "VIPS", Name: "vip-services", Key: []string{"VSCD"}, Title: "VIP services"},
	"ABDG": {Type: "ABDG", Name: "airbridges", Key: []string{"ABCD"}, Lists: []string{"STND", "GATE"}, Title: "airbridges (the stands and gates each serves)"},
}

// ReferenceKinds returns the reference-data catalogue, sorted by Name.
func ReferenceKinds() []ReferenceKind {
	out := make([]ReferenceKind, 0, len(referenceKinds))
	for _, k := range referenceKinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ReferenceKind) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupReferenceKind finds a reference-data type by its SIS TYPE (AIRL)
// or its list name (airlines), case-insensitively.
func LookupReferenceKind(name string) (ReferenceKind, bool) {
	if k, ok := referenceKinds[upper(name)]; ok {
		return k, true
	}
	for _, k := range referenceKinds {
		if strings.EqualFold(k.Name, name) {
			return k, true
		}
	}
	return ReferenceKind{}, false
}

// NotApplied is a message type of the interface that FlightFeed
// recognises and does not apply: such a message ends SKIPPED (NOT_APPLIED)
// at once, never retried, with Reason as its note.
type NotApplied struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// notApplied are the interface's types that FlightFeed does not apply.
// A type nobody knows is UNKNOWN_TYPE instead: FAILED(UNSUPPORTED),
// retried, then DEAD (processing rules R9).
var notApplied = map[string]NotApplied{
	"SCHS": {Type: "SCHS", Reason: "the seasonal schedule (SCHS) is not modelled: flight state comes from the daily schedule (SCHD) and flight events (FLOP)"},
	"RQFD": {Type: "RQFD", Reason: "a daily-schedule request (RQFD) is addressed to the AODB, not to its subscribers"},
	"RQRD": {Type: "RQRD", Reason: "a reference-data request (RQRD) is addressed to the AODB, not to its subscribers"},
}

// NotAppliedTypes returns the types the interface defines that FlightFeed
// does not apply, sorted by Type.
func NotAppliedTypes() []NotApplied {
	out := make([]NotApplied, 0, len(notApplied))
	for _, n := range notApplied {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b NotApplied) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// KnownType reports whether the interface defines TYPE typ (a flight,
// reference-data or not-applied type), so a metric may label it without
// bounding it: the catalogue is bounded by construction.
func KnownType(typ string) bool {
	switch typ {
	case TypeSCHD, TypeFLOP:
		return true
	}
	_, ref := referenceKinds[typ]
	_, na := notApplied[typ]
	return ref || na
}

// KnownStyp reports whether the interface defines STYP styp for some type.
func KnownStyp(styp string) bool {
	if _, ok := schdSubtypes[styp]; ok {
		return true
	}
	if _, ok := referenceOps[styp]; ok {
		return true
	}
	_, ok := flopSubtypes[styp]
	return ok || styp == StypNONE
}
