package sis

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// envelope wraps body in a MSG with a valid META of type/styp.
func envelope(typ, styp, body string) []byte {
	return []byte(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">
	<META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>42</SEQN><DDTM>20260909101500</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>
%s
</MSG>`, typ, styp, body))
}

// fltr renders one FLTR with a FLID, a SODT on 2026-09-09 and extra children.
func fltr(flid, extra string) string {
	return "<FLTR><FLID>" + flid + "</FLID><SODT>09SEP261015</SODT>" + extra + "</FLTR>"
}

// dnld renders a DNLD with RECS = number of records.
func dnld(records ...string) []byte {
	return envelope("SCHD", "DNLD", fmt.Sprintf("<SCHD><RECS>%d</RECS>%s</SCHD>", len(records), strings.Join(records, "")))
}

// flop renders a FLOP message with the given records' inner XML.
func flop(styp string, records ...string) []byte {
	var b strings.Builder
	for _, r := range records {
		b.WriteString("<FLOP>" + r + "</FLOP>")
	}
	return envelope("FLOP", styp, b.String())
}

func mustDecode(t *testing.T, raw []byte) *Message {
	t.Helper()
	msg, err := Decode(raw, Options{})
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, raw)
	}
	for _, r := range msg.Records {
		if err := r.Validate(); err != nil {
			t.Fatalf("record %d: %v", r.Index, err)
		}
	}
	return msg
}

func mustReject(t *testing.T, raw []byte, opts Options) *Error {
	t.Helper()
	_, err := Decode(raw, opts)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Decode error = %v, want *sis.Error\n%s", err, raw)
	}
	return e
}

func cmdOf(t *testing.T, rec Record, tag string) flight.Command {
	t.Helper()
	for _, c := range rec.Cmds {
		if c.Tag == tag {
			return c
		}
	}
	t.Fatalf("record %d has no command for %s: %+v", rec.Index, tag, rec.Cmds)
	return flight.Command{}
}
