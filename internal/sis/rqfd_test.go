package sis

import (
	"encoding/xml"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestEncodeRQFD(t *testing.T) {
	day := time.Date(2026, 9, 9, 0, 0, 0, 0, DefaultLocation)
	got, err := EncodeRQFD(RequestMeta{
		Sndr: "RMS", Rcvr: "AODB", Seqn: 42,
		Time: time.Date(2026, 9, 9, 2, 15, 0, 0, time.UTC), // 10:15 in Shanghai
	}, day, day.Add(23*time.Hour+59*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := "<MSG><META><SNDR>RMS</SNDR><RCVR>AODB</RCVR><SEQN>000042</SEQN><DDTM>20260909101500</DDTM>" +
		"<TYPE>RQFD</TYPE><STYP>NONE</STYP></META><RQFD><STDB>09SEP260000</STDB><STDE>09SEP262359</STDE></RQFD></MSG>"
	if string(got) != want {
		t.Fatalf("EncodeRQFD =\n%s\nwant\n%s", got, want)
	}
	var parsed struct {
		Meta struct{ SNDR, SEQN, TYPE, STYP string } `xml:"META"`
		RQFD struct{ STDB, STDE string }             `xml:"RQFD"`
	}
	if err := xml.Unmarshal(got, &parsed); err != nil || parsed.RQFD.STDE != "09SEP262359" || parsed.Meta.TYPE != TypeRQFD {
		t.Fatalf("not well-formed: %v %+v", err, parsed)
	}
}

func TestEncodeRQFDEscapesAndOmitsEmptyRCVR(t *testing.T) {
	at := time.Date(2026, 9, 9, 10, 0, 0, 0, DefaultLocation)
	got, err := EncodeRQFD(RequestMeta{Sndr: "R&D<1>", Seqn: 1, Time: at, Location: time.UTC}, at, at)
	if err != nil {
		t.Fatal(err)
	}
	want := "<MSG><META><SNDR>R&amp;D&lt;1&gt;</SNDR><SEQN>000001</SEQN><DDTM>20260909020000</DDTM>" +
		"<TYPE>RQFD</TYPE><STYP>NONE</STYP></META><RQFD><STDB>09SEP260200</STDB><STDE>09SEP260200</STDE></RQFD></MSG>"
	if string(got) != want {
		t.Fatalf("got %s", got)
	}
}

func TestEncodeRQFDRejects(t *testing.T) {
	at := time.Date(2026, 9, 9, 10, 0, 0, 0, DefaultLocation)
	tests := map[string]struct {
		meta       RequestMeta
		start, end time.Time
	}{
		"no sender":       {RequestMeta{Seqn: 1, Time: at}, at, at},
		"seqn zero":       {RequestMeta{Sndr: "R", Time: at}, at, at},
		"seqn too big":    {RequestMeta{Sndr: "R", Seqn: MaxSeqn + 1, Time: at}, at, at},
		"no request time": {RequestMeta{Sndr: "R", Seqn: 1}, at, at},
		"end before":      {RequestMeta{Sndr: "R", Seqn: 1, Time: at}, at, at.Add(-time.Minute)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := EncodeRQFD(tt.meta, tt.start, tt.end); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error = %v, want ErrBadRequest", err)
			}
		})
	}
}

func TestSeqnWraps(t *testing.T) {
	tests := []struct{ in, want Seqn }{{0, 1}, {1, 2}, {999998, 999999}, {999999, 1}, {1234567, 1}}
	for _, tt := range tests {
		if got := tt.in.Next(); got != tt.want {
			t.Errorf("%d.Next() = %d, want %d", tt.in, got, tt.want)
		}
	}
	if s := Seqn(42).String(); s != "000042" {
		t.Fatalf("String() = %q", s)
	}
	g := NewSeqnGenerator(999998)
	if a, b := g.Next(), g.Next(); a != 999999 || b != 1 || g.Last() != 1 {
		t.Fatalf("generator gave %d, %d (last %d)", a, b, g.Last())
	}
}

func TestSeqnGeneratorIsConcurrencySafe(t *testing.T) {
	g := NewSeqnGenerator(0)
	var wg sync.WaitGroup
	seen := make(chan Seqn, 1000)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				seen <- g.Next()
			}
		}()
	}
	wg.Wait()
	close(seen)
	unique := map[Seqn]bool{}
	for s := range seen {
		unique[s] = true
	}
	if len(unique) != 1000 || g.Last() != 1000 {
		t.Fatalf("%d unique, last %d", len(unique), g.Last())
	}
}

func TestEncodeRQRD(t *testing.T) {
	at := time.Date(2026, 9, 9, 2, 15, 0, 0, time.UTC) // 10:15 in Shanghai
	tests := map[string]struct {
		meta RequestMeta
		typ  string
		want string
	}{
		"gates with a receiver": {
			meta: RequestMeta{Sndr: "RMS", Rcvr: "AODB", Seqn: 42, Time: at},
			typ:  "GLST",
			want: "<MSG><META><SNDR>RMS</SNDR><RCVR>AODB</RCVR><SEQN>000042</SEQN><DDTM>20260909101500</DDTM>" +
				"<TYPE>RQRD</TYPE><STYP>GLST</STYP></META><RQRD><RTYP>GLST</RTYP></RQRD></MSG>",
		},
		"airlines, no receiver, UTC, escaped sender": {
			meta: RequestMeta{Sndr: "R&D", Seqn: 999999, Time: at, Location: time.UTC},
			typ:  "AIRL",
			want: "<MSG><META><SNDR>R&amp;D</SNDR><SEQN>999999</SEQN><DDTM>20260909021500</DDTM>" +
				"<TYPE>RQRD</TYPE><STYP>AIRL</STYP></META><RQRD><RTYP>AIRL</RTYP></RQRD></MSG>",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := EncodeRQRD(tt.meta, tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("EncodeRQRD =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Every reference-data type can be requested, and the request is one the
// module's own decoder knows: TYPE RQRD, STYP and RTYP the type, not
// applied (it is addressed to the AODB).
func TestEncodeRQRDEveryReferenceType(t *testing.T) {
	at := time.Date(2026, 9, 9, 10, 0, 0, 0, DefaultLocation)
	for _, k := range ReferenceKinds() {
		got, err := EncodeRQRD(RequestMeta{Sndr: "RMS", Seqn: 7, Time: at}, k.Type)
		if err != nil {
			t.Fatalf("%s: %v", k.Type, err)
		}
		var parsed struct {
			Meta struct{ SNDR, SEQN, DDTM, TYPE, STYP string } `xml:"META"`
			RQRD struct{ RTYP string }                         `xml:"RQRD"`
		}
		if err := xml.Unmarshal(got, &parsed); err != nil {
			t.Fatalf("%s: not well-formed: %v\n%s", k.Type, err, got)
		}
		if parsed.Meta.TYPE != TypeRQRD || parsed.Meta.STYP != k.Type || parsed.RQRD.RTYP != k.Type || parsed.Meta.SEQN != "000007" ||
			parsed.Meta.DDTM != "20260909100000" {
			t.Fatalf("%s: %+v", k.Type, parsed)
		}
		msg, err := Decode(got, Options{})
		if err != nil {
			t.Fatalf("%s: the decoder refuses the request: %v", k.Type, err)
		}
		if msg.Kind != KindNotApplied || msg.Meta.Type != TypeRQRD || msg.Meta.Styp != k.Type {
			t.Fatalf("%s: decoded as %s %s/%s", k.Type, msg.Kind, msg.Meta.Type, msg.Meta.Styp)
		}
	}
}

func TestEncodeRQRDRejects(t *testing.T) {
	at := time.Date(2026, 9, 9, 10, 0, 0, 0, DefaultLocation)
	ok := RequestMeta{Sndr: "R", Seqn: 1, Time: at}
	tests := map[string]struct {
		meta RequestMeta
		typ  string
	}{
		"no sender":        {RequestMeta{Seqn: 1, Time: at}, "GLST"},
		"seqn zero":        {RequestMeta{Sndr: "R", Time: at}, "GLST"},
		"seqn too big":     {RequestMeta{Sndr: "R", Seqn: MaxSeqn + 1, Time: at}, "GLST"},
		"no request time":  {RequestMeta{Sndr: "R", Seqn: 1}, "GLST"},
		"no type":          {ok, ""},
		"a list name":      {ok, "gates"},
		"lower case":       {ok, "glst"},
		"a flight type":    {ok, "SCHD"},
		"markup in a type": {ok, "GLST</RTYP>"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got, err := EncodeRQRD(tt.meta, tt.typ); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error = %v (%s), want ErrBadRequest", err, got)
			}
		})
	}
}
