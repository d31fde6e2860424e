package sis

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// metaTimeLayout is the outbound META time format (yyyyMMddHHmmss).
const metaTimeLayout = "20060102150405"

// RequestMeta is the META of an outbound request.
type RequestMeta struct {
	Sndr string
	Rcvr string // optional
	Seqn Seqn
	// Time is when the request is made; written in Location.
	Time time.Time
	// Location is the airport zone for META and SIS times (nil = default).
	Location *time.Location
}

// ErrBadRequest is wrapped by every EncodeRQFD and EncodeRQRD validation
// failure.
var ErrBadRequest = errors.New("bad outbound request")

// EncodeRQFD renders the flight-data request (processing rules R2.2):
//
//	<MSG><META><SNDR>…</SNDR>[<RCVR>…</RCVR>]<SEQN>000042</SEQN><DDTM>yyyyMMddHHmmss</DDTM>
//	<TYPE>RQFD</TYPE><STYP>NONE</STYP></META><RQFD><STDB>DDMONYYHHMM</STDB><STDE>DDMONYYHHMM</STDE></RQFD></MSG>
//
// start and end are written as SIS local times (minute precision) in the
// airport zone; for one operation day D pass D 00:00 and D 23:59.
func EncodeRQFD(meta RequestMeta, start, end time.Time) ([]byte, error) {
	if end.Before(start) {
		return nil, fmt.Errorf("%w: end %s before start %s", ErrBadRequest, end, start)
	}
	b, loc, err := requestMeta(meta, TypeRQFD, StypNONE)
	if err != nil {
		return nil, err
	}
	b.WriteString("<RQFD><STDB>" + flight.FormatSISTime(start, loc) + "</STDB>")
	b.WriteString("<STDE>" + flight.FormatSISTime(end, loc) + "</STDE></RQFD></MSG>")
	return b.Bytes(), nil
}

// EncodeRQRD renders the reference-data request: the whole list of the
// reference-data type typ (a SIS TYPE such as GLST), which the AODB
// answers with TYPE=typ STYP=RESP. Its STYP is the type requested, and so
// is its body's RTYP (the AODB's interface, as its own consumer writes it):
//
//	<MSG><META><SNDR>…</SNDR>[<RCVR>…</RCVR>]<SEQN>000042</SEQN><DDTM>yyyyMMddHHmmss</DDTM>
//	<TYPE>RQRD</TYPE><STYP>GLST</STYP></META><RQRD><RTYP>GLST</RTYP></RQRD></MSG>
func EncodeRQRD(meta RequestMeta, typ string) ([]byte, error) {
	if _, ok := referenceKinds[typ]; !ok {
		return nil, fmt.Errorf("%w: %q is no reference-data TYPE", ErrBadRequest, typ)
	}
	b, _, err := requestMeta(meta, TypeRQRD, typ)
	if err != nil {
		return nil, err
	}
	b.WriteString("<RQRD><RTYP>" + typ + "</RTYP></RQRD></MSG>")
	return b.Bytes(), nil
}

// requestMeta checks meta and writes the request's opening up to and with
// </META>; it returns the zone the request's times are written in.
func requestMeta(meta RequestMeta, typ, styp string) (*bytes.Buffer, *time.Location, error) {
	loc := meta.Location
	if loc == nil {
		loc = DefaultLocation
	}
	switch {
	case meta.Sndr == "":
		return nil, nil, fmt.Errorf("%w: SNDR is empty", ErrBadRequest)
	case meta.Seqn < 1 || meta.Seqn > MaxSeqn:
		return nil, nil, fmt.Errorf("%w: SEQN %d outside 1–%d", ErrBadRequest, uint32(meta.Seqn), uint32(MaxSeqn))
	case meta.Time.IsZero():
		return nil, nil, fmt.Errorf("%w: request time is zero", ErrBadRequest)
	}
	b := &bytes.Buffer{}
	b.WriteString("<MSG><META>")
	if err := writeElement(b, "SNDR", meta.Sndr); err != nil {
		return nil, nil, err
	}
	if meta.Rcvr != "" {
		if err := writeElement(b, "RCVR", meta.Rcvr); err != nil {
			return nil, nil, err
		}
	}
	b.WriteString("<SEQN>" + meta.Seqn.String() + "</SEQN>")
	b.WriteString("<DDTM>" + meta.Time.In(loc).Format(metaTimeLayout) + "</DDTM>")
	b.WriteString("<TYPE>" + typ + "</TYPE><STYP>" + styp + "</STYP></META>")
	return b, loc, nil
}

func writeElement(b *bytes.Buffer, tag, text string) error {
	b.WriteString("<" + tag + ">")
	if err := xml.EscapeText(b, []byte(text)); err != nil {
		return fmt.Errorf("escape %s: %w", tag, err)
	}
	b.WriteString("</" + tag + ">")
	return nil
}
