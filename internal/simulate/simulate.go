package simulate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Options shape a stream.
type Options struct {
	// Day is the operation day ("YYYY-MM-DD") of the schedule.
	Day string
	// Flights on the day (default 20).
	Flights int
	// Malformed adds this many broken messages (DEAD on arrival).
	Malformed int
	// Seed makes the stream reproducible.
	Seed uint64
	// FirstSeqn is the first META SEQN (default 1); it wraps at 999999.
	FirstSeqn int
	// Location is the airport zone (default UTC+8).
	Location *time.Location
}

// Message is one generated mailbox message and what it is for.
type Message struct {
	What string
	Body string
}

var airlines = []struct{ iata, icao string }{{"CA", "CCA"}, {"MU", "CES"}, {"CZ", "CSN"}, {"HU", "CHH"}, {"3U", "CSC"}}
var airports = []string{"SHA", "CAN", "CTU", "SZX", "HKG", "XIY", "KMG", "HGH"}

type gen struct {
	opts Options
	r    *rand.Rand
	seqn int
	day  time.Time
}

// Response is the RESP that answers a full-day request for opts.Day.
func Response(opts Options) Message {
	g := newGen(opts)
	return Message{What: "RESP full-day schedule", Body: g.schd("RESP", g.flights())}
}

// Stream is the day's traffic after the schedule: the window push, FLOP
// events of every mapped kind, an ADFT, an FDEL and the malformed messages.
func Stream(opts Options) []Message {
	g := newGen(opts)
	g.seqn++ // after Response
	flights := g.flights()
	var out []Message
	// The AODB's scheduled window push: today's flights again (changed
	// estimates) as window semantics.
	for i := range flights {
		flights[i].estt = g.at(flights[i].std.Add(time.Duration(g.r.IntN(40)) * time.Minute))
	}
	out = append(out, Message{What: "DNLD window push", Body: g.schd("DNLD", flights)})
	// One FLOP of every mapped kind, spread over the flights.
	for i, f := range flight.Fields() {
		fl := flights[i%len(flights)]
		out = append(out, Message{What: "FLOP " + f.Tag, Body: g.flop(f.Tag, fl.flid, g.flopBody(f, fl))})
	}
	adhoc := flightRow{flid: flights[len(flights)-1].flid + 1000, airline: airlines[0], number: 9999, dep: true,
		std: g.day.Add(23 * time.Hour), dest: "SHA"}
	out = append(out, Message{What: "ADFT ad-hoc flight", Body: g.wrap("SCHD", "ADFT", "<SCHD><RECS>1</RECS>"+g.fltr(adhoc)+"</SCHD>")})
	out = append(out, Message{What: "FDEL", Body: g.flop("FDEL", flights[1].flid, "")})
	for i := range opts.Malformed {
		out = append(out, g.malformed(i))
	}
	return out
}

func newGen(opts Options) *gen {
	if opts.Flights <= 0 {
		opts.Flights = 20
	}
	if opts.FirstSeqn <= 0 {
		opts.FirstSeqn = 1
	}
	if opts.Location == nil {
		opts.Location = time.FixedZone("Asia/Shanghai", 8*3600)
	}
	day, err := time.ParseInLocation(time.DateOnly, opts.Day, opts.Location)
	if err != nil {
		day = time.Now().In(opts.Location).Truncate(24 * time.Hour)
	}
	return &gen{opts: opts, r: rand.New(rand.NewPCG(opts.Seed, 0xf11)), seqn: opts.FirstSeqn - 1, day: day} //nolint:gosec // test data
}

type flightRow struct {
	flid    int64
	airline struct{ iata, icao string }
	number  int
	dep     bool
	std     time.Time
	estt    string
	dest    string
	gate    string
}

// flights are the day's schedule: FLIDs derived from the day so two days
// never share one, departures and arrivals every few minutes.
func (g *gen) flights() []flightRow {
	r := rand.New(rand.NewPCG(g.opts.Seed, 0xda7)) //nolint:gosec // test data
	base := int64(g.day.Year()%100)*1e8 + int64(g.day.YearDay())*1e5
	out := make([]flightRow, g.opts.Flights)
	for i := range out {
		a := airlines[r.IntN(len(airlines))]
		out[i] = flightRow{
			flid: base + int64(i+1), airline: a, number: 1000 + r.IntN(8000), dep: i%2 == 0,
			std:  g.day.Add(time.Duration(6*60+i*(17*60/g.opts.Flights)) * time.Minute),
			dest: airports[r.IntN(len(airports))], gate: fmt.Sprintf("%c%d", "ABCDE"[r.IntN(5)], 1+r.IntN(40)),
		}
	}
	return out
}

func (g *gen) at(t time.Time) string { return flight.FormatSISTime(t, g.opts.Location) }

func (g *gen) nextSeqn() int {
	g.seqn++
	if g.seqn > 999999 {
		g.seqn = 1
	}
	return g.seqn
}

func (g *gen) wrap(typ, styp, body string) string {
	return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>%d</SEQN><DDTM>%s</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>`,
		g.nextSeqn(), g.day.Add(5*time.Hour).Format("20060102150405"), typ, styp, body)
}

func (g *gen) schd(styp string, flights []flightRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(flights))
	for _, f := range flights {
		b.WriteString(g.fltr(f))
	}
	b.WriteString("</SCHD>")
	return g.wrap("SCHD", styp, b.String())
}

func (g *gen) fltr(f flightRow) string {
	mvin := "A"
	if f.dep {
		mvin = "D"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><ALCD>%s</ALCD><ALSC>%s</ALSC><FLNO>%s%d</FLNO><MVIN>%s</MVIN><SODT>%s</SODT>",
		f.flid, f.airline.iata, f.airline.icao, f.airline.iata, f.number, mvin, g.at(f.std))
	if f.estt != "" {
		fmt.Fprintf(&b, "<ESTT>%s</ESTT>", f.estt)
	}
	fmt.Fprintf(&b, `<ACFT>320</ACFT><TRML>T3</TRML><ROUT RTNO="1"><APCD>%s</APCD></ROUT>`, f.dest)
	if f.gate != "" && f.dep {
		fmt.Fprintf(&b, `<GTDT GTNO="1"><GATE>%s</GATE><GTYP>D</GTYP></GTDT>`, f.gate)
	}
	b.WriteString("</FLTR>")
	return b.String()
}

func (g *gen) flop(styp string, flid int64, inner string) string {
	return g.wrap("FLOP", styp, fmt.Sprintf("<FLOP><FLID>%d</FLID>%s</FLOP>", flid, inner))
}

// flopBody is a plausible value for one field.
func (g *gen) flopBody(f flight.FieldSpec, fl flightRow) string {
	t := g.at(fl.std.Add(time.Duration(g.r.IntN(30)) * time.Minute))
	switch f.Kind {
	case flight.KindScalar:
		v := fmt.Sprintf("%s-%d", f.Tag, g.r.IntN(100))
		if timeFields[f.Tag] {
			v = t
		}
		return fmt.Sprintf("<%s>%s</%s>", f.Tag, v, f.Tag)
	case flight.KindCollection:
		seq := ""
		if f.SeqAttr != "" {
			seq = fmt.Sprintf(` %s="1"`, f.SeqAttr)
		}
		var children strings.Builder
		for _, c := range f.ItemColumns {
			fmt.Fprintf(&children, "<%s>%s</%s>", c, strings.ToLower(c)+"-1", c)
		}
		if f.Tag == "DELY" {
			return `<DELY CODE="81" DURA="0020">ATC flow control</DELY>`
		}
		return fmt.Sprintf("<%s%s>%s</%s>", f.Tag, seq, children.String(), f.Tag)
	case flight.KindAnomaly:
		return fmt.Sprintf(`<%s DDES="HKG" DDIR="TO">weather</%s>`, f.Tag, f.Tag)
	default:
		return fmt.Sprintf("<%s><CODE>%s1</CODE><TEXT>simulated</TEXT></%s>", f.Tag, f.Tag, f.Tag)
	}
}

// timeFields carry SIS times (DDMONYYHHMM).
var timeFields = map[string]bool{"SODT": true, "ESTT": true, "ACTT": true, "CNCL": true, "BOTM": true, "EGST": true,
	"EGSR": true, "PEDT": true, "NEAT": true, "PADT": true, "NAAT": true, "STDT": true, "EDDT": true, "COBT": true,
	"TOBT": true, "EOBT": true, "CTOT": true, "IEST": true}

// malformed returns one of several kinds of broken input in turn.
func (g *gen) malformed(i int) Message {
	switch i % 5 {
	case 0:
		return Message{What: "malformed: truncated XML", Body: `<MSG><META><SNDR>AODB</SNDR><SEQN>1`}
	case 1:
		return Message{What: "malformed: RECS mismatch", Body: strings.Replace(g.schd("RESP", g.flights()[:1]), "<RECS>1</RECS>", "<RECS>2</RECS>", 1)}
	case 2:
		return Message{What: "malformed: non-numeric FLID", Body: g.wrap("FLOP", "ESTT", "<FLOP><FLID>12AB</FLID><ESTT>01JAN260000</ESTT></FLOP>")}
	case 3:
		return Message{What: "malformed: sequence 0 mixed", Body: g.flop("GTDT", 1, `<GTDT GTNO="0"/><GTDT GTNO="1"><GATE>A1</GATE></GTDT>`)}
	default:
		return Message{What: "malformed: bad SIS time", Body: g.flop("SODT", 1, "<SODT>31FOO261200</SODT>")}
	}
}

// Backlog is n FLOP messages over the day's flights (those of Response),
// for benchmarks: a mix of estimated times, gates, stands, delays and
// check-in counters, the flights taken in a seeded random order, and every
// message changes its flight (each value is new for the flight), so every
// one commits a new state version and notice. The values count from
// FirstSeqn, so backlogs of disjoint sequence ranges (one after another on
// the same day) do not repeat each other either.
func Backlog(opts Options, n int) []Message {
	g := newGen(opts)
	flights := g.flights()
	order := rand.New(rand.NewPCG(g.opts.Seed, uint64(g.opts.FirstSeqn))) //nolint:gosec // test data
	seen := make([]int, len(flights))
	out := make([]Message, n)
	for i := range out {
		k := order.IntN(len(flights))
		fl := flights[k]
		// c is this flight's message count: the values below are distinct
		// for distinct c, whatever the kind.
		seen[k]++
		c := g.opts.FirstSeqn + seen[k]
		var styp, inner string
		switch i % 5 {
		case 0:
			styp, inner = "ESTT", fmt.Sprintf("<ESTT>%s</ESTT>", g.at(fl.std.Add(time.Duration(c%1440)*time.Minute)))
		case 1:
			styp, inner = "GTDT", fmt.Sprintf(`<GTDT GTNO="1"><GATE>G%d</GATE><GTYP>D</GTYP></GTDT>`, c)
		case 2:
			styp, inner = "STND", fmt.Sprintf("<STND>S%d</STND>", c)
		case 3:
			styp, inner = "DELY", fmt.Sprintf(`<DELY CODE="81" DURA="%02d%02d">ATC</DELY>`, c/60%100, c%60)
		default:
			styp, inner = "CKDT", fmt.Sprintf(`<CKDT CKNO="1"><CHKC>C%d</CHKC></CKDT><CKDT CKNO="2"><CHKC>D%d</CHKC></CKDT>`, c, c)
		}
		out[i] = Message{What: "FLOP " + styp, Body: g.flop(styp, fl.flid, inner)}
	}
	return out
}
