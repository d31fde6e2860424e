package sistest

import (
	"bytes"
	"fmt"
	"time"
)

// Day is the operation day every generated flight belongs to.
var Day = time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)

var months = [...]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

// sisTime renders Day plus minutes as DDMONYYHHMM (no time zone math: the
// generator writes airport-local wall clock directly).
func sisTime(minutes int) string {
	t := Day.Add(time.Duration(minutes) * time.Minute)
	return fmt.Sprintf("%02d%s%02d%02d%02d", t.Day(), months[t.Month()-1], t.Year()%100, t.Hour(), t.Minute())
}

// DNLD returns a SCHD DNLD message with n flight records (FLID 100000+i),
// pretty-printed like real feeds. Every record carries every scalar, every
// collection kind with several items, the three anomalies and the six
// records, about 3 KB each: n = 9999 gives roughly 30 MB.
func DNLD(n int) []byte {
	var b bytes.Buffer
	b.Grow(n*3300 + 1024) // measured: about 3,155 bytes per record
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">` + "\n")
	b.WriteString("\t<META>\n\t\t<SNDR>AODB</SNDR>\n\t\t<RCVR>RMS</RCVR>\n\t\t<SEQN>000042</SEQN>\n\t\t<DDTM>20260908220000</DDTM>\n")
	b.WriteString("\t\t<TYPE>SCHD</TYPE>\n\t\t<STYP>DNLD</STYP>\n\t</META>\n\t<SCHD>\n")
	fmt.Fprintf(&b, "\t\t<RECS>%d</RECS>\n", n)
	for i := 0; i < n; i++ {
		writeFLTR(&b, i)
	}
	b.WriteString("\t</SCHD>\n</MSG>\n")
	return b.Bytes()
}

func writeFLTR(b *bytes.Buffer, i int) {
	minute := (i * 7) % 1380 // spread over the day, 00:00–22:59
	airline := [...]string{"CA", "MU", "CZ", "HU", "3U"}[i%5]
	mvin := "D"
	if i%2 == 1 {
		mvin = "A"
	}
	flno := fmt.Sprintf("%s%04d", airline, 1000+i%9000)
	w := func(tag, v string) { fmt.Fprintf(b, "\t\t\t<%s>%s</%s>\n", tag, v, tag) }
	b.WriteString("\t\t<FLTR>\n")
	w("FLID", fmt.Sprint(100000+i))
	w("FFID", fmt.Sprintf("%s-%s-%s-%s-%s", airline, flno, mvin, sisTime(minute), "D"))
	w("ALCD", airline)
	w("ALSC", airline)
	w("FLNO", flno)
	w("MVIN", mvin)
	w("SODT", sisTime(minute))
	w("FLTY", "W")
	w("FLIN", "D")
	w("ACFT", "333")
	w("RENO", fmt.Sprintf("B%04d", i%10000))
	w("TAOP", airline)
	w("TAFL", fmt.Sprintf("%s%04d", airline, 1000+(i+1)%9000))
	w("TAID", fmt.Sprint(100000+i+1))
	w("TRML", "T3")
	w("MAXP", "300")
	w("CSOP", "")
	w("CSFT", "")
	w("MAID", "")
	w("ESTT", sisTime(minute+5))
	w("ACTT", sisTime(minute+9))
	w("STND", fmt.Sprintf("%d", 500+i%80))
	w("PHAG", "110009")
	w("FHAG", "110009")
	w("MHAG", "110009")
	w("CNCL", "")
	w("REMC", "ON TIME &amp; GATE OPEN")
	w("BOTM", sisTime(minute-20))
	w("LACL", sisTime(minute-15))
	w("FINT", sisTime(minute-30))
	w("APPT", sisTime(minute-40))
	w("EGSR", sisTime(minute-60))
	w("EGST", sisTime(minute-55))
	w("VIPP", "0")
	w("VIPR", "")
	w("LBNO", "3")
	w("LBWT", "2400")
	w("PAXC", "287")
	w("EXSC", "RCFLOP")
	w("EXSR", "AODB")
	w("EXSS", "N")
	w("FTSS", "RCFLOP")
	w("PEDT", sisTime(minute-10))
	w("NEAT", sisTime(minute+25))
	w("PADT", sisTime(minute-12))
	w("NAAT", sisTime(minute+2))
	w("STDT", sisTime(minute))
	w("EDDT", sisTime(minute+5))
	w("DYOP", "1")
	w("SCHT", "J")
	w("COBT", sisTime(minute+3))
	w("TOBT", sisTime(minute+4))
	w("EOBT", sisTime(minute+5))
	w("CTOT", sisTime(minute+15))
	w("IEST", sisTime(minute+1))
	w("RUNW", "36R")
	writeCollections(b, i, minute)
	b.WriteString("\t\t</FLTR>\n")
}

func writeCollections(b *bytes.Buffer, i, minute int) {
	for g := 1; g <= 2; g++ {
		fmt.Fprintf(b, "\t\t\t<GTDT GTNO=\"%d\">\n\t\t\t\t<GATE>G%02d</GATE>\n\t\t\t\t<PGOT>%s</PGOT>\n\t\t\t\t<PGCT>%s</PGCT>\n\t\t\t\t<GOTM>%s</GOTM>\n\t\t\t\t<GTYP>D</GTYP>\n\t\t\t</GTDT>\n",
			g, (i+g)%60, sisTime(minute-45), sisTime(minute-15), sisTime(minute-44))
	}
	for c := 1; c <= 4; c++ {
		fmt.Fprintf(b, "\t\t\t<CKDT CKNO=\"%d\">\n\t\t\t\t<CHKC>%02d</CHKC>\n\t\t\t\t<CCLS>Y</CCLS>\n\t\t\t\t<PCOT>%s</PCOT>\n\t\t\t\t<PCCT>%s</PCCT>\n\t\t\t\t<CTYP>D</CTYP>\n\t\t\t</CKDT>\n",
			c, (i+c)%99, sisTime(minute-150), sisTime(minute-40))
	}
	fmt.Fprintf(b, "\t\t\t<CLDT CLNO=\"1\">\n\t\t\t\t<BELT>B%02d</BELT>\n\t\t\t\t<BCLS>X</BCLS>\n\t\t\t\t<PCOT>%s</PCOT>\n\t\t\t\t<BTYP>D</BTYP>\n\t\t\t</CLDT>\n", i%30, sisTime(minute+10))
	fmt.Fprintf(b, "\t\t\t<PSDT PSNO=\"1\">\n\t\t\t\t<PSST>%d</PSST>\n\t\t\t\t<STST>%s</STST>\n\t\t\t\t<STET>%s</STET>\n\t\t\t</PSDT>\n", 500+i%80, sisTime(minute-90), sisTime(minute+5))
	fmt.Fprintf(b, "\t\t\t<CHDT CHNO=\"1\">\n\t\t\t\t<CHUT>CH%04d</CHUT>\n\t\t\t\t<CCLS>X</CCLS>\n\t\t\t\t<CTYP>D</CTYP>\n\t\t\t</CHDT>\n", i%50)
	fmt.Fprintf(b, "\t\t\t<DELY CODE=\"93\" STRT=\"%s\" DURA=\"0015\">LATE INBOUND</DELY>\n", sisTime(minute))
	fmt.Fprintf(b, "\t\t\t<ABTM ASNO=\"1\">\n\t\t\t\t<ABDG>%d</ABDG>\n\t\t\t\t<ABOP>D</ABOP>\n\t\t\t\t<AOTM>%s</AOTM>\n\t\t\t</ABTM>\n", 200+i%40, sisTime(minute-50))
	fmt.Fprintf(b, "\t\t\t<CHOT CSNO=\"1\">\n\t\t\t\t<CHTM>%s</CHTM>\n\t\t\t\t<CHID>OFF</CHID>\n\t\t\t\t<CHST>%d</CHST>\n\t\t\t</CHOT>\n", sisTime(minute+6), 500+i%80)
	fmt.Fprintf(b, "\t\t\t<ROUT RTNO=\"1\">\n\t\t\t\t<APCD>SHA</APCD>\n\t\t\t\t<SCDT>%s</SCDT>\n\t\t\t</ROUT>\n", sisTime(minute))
	fmt.Fprintf(b, "\t\t\t<ERUT RTNO=\"1\">\n\t\t\t\t<APCD>CTU</APCD>\n\t\t\t\t<SCAT>%s</SCAT>\n\t\t\t</ERUT>\n", sisTime(minute+150))
	b.WriteString("\t\t\t<FDIV DDES=\"HKG\" DDIR=\"TO\"></FDIV>\n")
	b.WriteString("\t\t\t<SRVT>\n\t\t\t\t<SRTC>ATN</SRTC>\n\t\t\t\t<SRQT>2</SRQT>\n\t\t\t</SRVT>\n")
	fmt.Fprintf(b, "\t\t\t<TIPT>\n\t\t\t\t<TRTM>%s</TRTM>\n\t\t\t\t<TRST>%d</TRST>\n\t\t\t</TIPT>\n", sisTime(minute-5), 500+i%80)
}
