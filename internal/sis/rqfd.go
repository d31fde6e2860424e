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

// ErrBadRequest is wrapped by every EncodeRQFD validation failure.
var ErrBadRequest = errors.New("bad RQFD request")

// EncodeRQFD renders the flight-data request (SPEC §3.2):
//
//	<MSG><META><SNDR>…</SNDR>[<RCVR>…</RCVR>]<SEQN>000042</SEQN><DDTM>yyyyMMddHHmmss</DDTM>
//	<TYPE>RQFD</TYPE><STYP>NONE</STYP></META><RQFD><STDB>DDMONYYHHMM</STDB><STDE>DDMONYYHHMM</STDE></RQFD></MSG>
//
// start and end are written as SIS local times (minute precision) in the
// airport zone; for one operation day D pass D 00:00 and D 23:59.
func EncodeRQFD(meta RequestMeta, start, end time.Time) ([]byte, error) {
	loc := meta.Location
	if loc == nil {
		loc = DefaultLocation
	}
	switch {
	case meta.Sndr == "":
		return nil, fmt.Errorf("%w: SNDR is empty", ErrBadRequest)
	case meta.Seqn < 1 || meta.Seqn > MaxSeqn:
		return nil, fmt.Errorf("%w: SEQN %d outside 1–%d", ErrBadRequest, uint32(meta.Seqn), uint32(MaxSeqn))
	case meta.Time.IsZero():
		return nil, fmt.Errorf("%w: request time is zero", ErrBadRequest)
	case end.Before(start):
		return nil, fmt.Errorf("%w: end %s before start %s", ErrBadRequest, end, start)
	}
	var b bytes.Buffer
	b.WriteString("<MSG><META>")
	if err := writeElement(&b, "SNDR", meta.Sndr); err != nil {
		return nil, err
	}
	if meta.Rcvr != "" {
		if err := writeElement(&b, "RCVR", meta.Rcvr); err != nil {
			return nil, err
		}
	}
	b.WriteString("<SEQN>" + meta.Seqn.String() + "</SEQN>")
	b.WriteString("<DDTM>" + meta.Time.In(loc).Format(metaTimeLayout) + "</DDTM>")
	b.WriteString("<TYPE>" + TypeRQFD + "</TYPE><STYP>" + StypNONE + "</STYP></META>")
	b.WriteString("<RQFD><STDB>" + flight.FormatSISTime(start, loc) + "</STDB>")
	b.WriteString("<STDE>" + flight.FormatSISTime(end, loc) + "</STDE></RQFD></MSG>")
	return b.Bytes(), nil
}

func writeElement(b *bytes.Buffer, tag, text string) error {
	b.WriteString("<" + tag + ">")
	if err := xml.EscapeText(b, []byte(text)); err != nil {
		return fmt.Errorf("escape %s: %w", tag, err)
	}
	b.WriteString("</" + tag + ">")
	return nil
}
