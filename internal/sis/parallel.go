package sis

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// parallelMinBytes is the message size from which a SCHD body is decoded in
// chunks on several cores; below it, starting workers costs more than it
// saves. A variable so tests can force the parallel path on small inputs.
var parallelMinBytes = 4 << 20

// onParallelCommit lets tests observe that the chunked path was taken.
var onParallelCommit = func() {}

// maxWorkers caps the default number of chunk workers.
const maxWorkers = 4

func (d *decoder) workers() int {
	if d.opts.Workers > 0 {
		return d.opts.Workers
	}
	return min(runtime.GOMAXPROCS(0), maxWorkers)
}

// schdOpen is the element stack inside <SCHD>.
var schdOpen = []string{"MSG", "SCHD"}

// chunk is a run of whole FLTR elements inside the SCHD body.
type chunk struct {
	lo, hi     int // absolute input offsets
	firstIndex int // 1-based index of its first FLTR in the message
	count      int // FLTR start tags in it
}

type chunkResult struct {
	records []Record
	ignored map[string]int
	ok      bool
}

// tryParallelSCHD decodes the content of the <SCHD> element whose start tag
// was just consumed, in chunks of FLTR records on several goroutines, and
// consumes the </SCHD> end tag. It is only an accelerator: on anything it is
// not sure of — comments, CDATA or processing instructions (where "<FLTR"
// might not be a tag), elements other than FLTR between records, any error,
// any cross-record check that fails — it returns false having changed
// nothing, and the sequential path decodes the body (and reports the error)
// exactly as if it had never run. When it returns true, the outcome is the
// one the sequential path would have produced.
func (d *decoder) tryParallelSCHD(st *schdState) bool {
	workers := d.workers()
	input := d.scan.input
	if workers < 2 || len(input) < parallelMinBytes || d.scan.base != 0 {
		return false
	}
	pos := d.scan.offset()
	rest := input[pos:]
	if strings.Contains(rest, "<!") || strings.Contains(rest, "<?") {
		return false
	}
	end := closingTagIndex(rest, "SCHD")
	if end < 0 {
		return false
	}
	starts := tagStarts(rest[:end], "FLTR")
	if len(starts) < 2*workers {
		return false
	}
	prefix, ok := d.decodeSCHDPrefix(st, pos, pos+starts[0])
	if !ok {
		return false
	}
	chunks := splitChunks(starts, pos, pos+end, workers)
	results := make([]chunkResult, len(chunks))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.decodeChunk(c)
		}()
	}
	wg.Wait()
	records, ok := mergeChunks(results, len(starts))
	if !ok || !d.crossRecordChecksPass(records, prefix.msg.Recs, st.seenFLIDs) {
		return false
	}
	remainder := newRangeScanner(input, pos+end, len(input), d.scan.open, 0, d.scan.maxDepth)
	if tok, err := remainder.next(); err != nil || !isEnd(tok, "SCHD") {
		return false
	}
	// Commit: from here on the outcome is the sequential one.
	onParallelCommit()
	d.msg.Recs = prefix.msg.Recs
	st.recsPath = prefix.recsPath
	for tag, n := range prefix.msg.IgnoredTags {
		d.msg.addIgnored(tag, n)
	}
	for _, r := range results {
		for tag, n := range r.ignored {
			d.msg.addIgnored(tag, n)
		}
	}
	if st.seenFLIDs != nil {
		for _, rec := range records {
			st.seenFLIDs[rec.FLID] = rec.Index
		}
	}
	d.msg.Records = append(d.msg.Records, records...)
	d.scan = remainder
	return true
}

type prefixResult struct {
	msg      *Message
	recsPath string
}

// decodeSCHDPrefix decodes what precedes the first FLTR (RECS, unmapped
// elements) into scratch state.
func (d *decoder) decodeSCHDPrefix(st *schdState, lo, hi int) (prefixResult, bool) {
	sub := d.subDecoder(lo, hi)
	sub.msg.Recs = d.msg.Recs
	scratch := &schdState{recsPath: st.recsPath}
	for {
		tok, err := sub.scan.next()
		if errors.Is(err, io.EOF) {
			return prefixResult{msg: sub.msg, recsPath: scratch.recsPath}, true
		}
		if err != nil {
			return prefixResult{}, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if qualified(t.Name) == "RECS" {
				err = sub.recs(t, scratch, "MSG/SCHD/RECS")
			} else {
				err = sub.ignoreElement(t)
			}
			if err != nil {
				return prefixResult{}, false
			}
		case xml.CharData:
			if !isBlankBytes(t) {
				return prefixResult{}, false
			}
		default:
			return prefixResult{}, false
		}
	}
}

// decodeChunk decodes a run of FLTR elements; anything else fails the chunk.
func (d *decoder) decodeChunk(c chunk) chunkResult {
	sub := d.subDecoder(c.lo, c.hi)
	full := d.msg.Kind == KindSnapshot
	records := make([]Record, 0, c.count)
	for {
		tok, err := sub.scan.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return chunkResult{}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if qualified(t.Name) != "FLTR" {
				return chunkResult{}
			}
			index := c.firstIndex + len(records)
			sub.scan.resetTree()
			n, err := sub.scan.readTree(t)
			if err != nil {
				return chunkResult{}
			}
			rec, err := sub.decodeRecord(n, fmt.Sprintf("MSG/SCHD/FLTR[%d]", index), index, recordRules{full: full, requireSODT: full})
			if err != nil {
				return chunkResult{}
			}
			records = append(records, rec)
		case xml.CharData:
			if !isBlankBytes(t) {
				return chunkResult{}
			}
		default:
			return chunkResult{}
		}
	}
	if len(records) != c.count {
		return chunkResult{} // a "<FLTR" that was not a record (nested): let the sequential path judge
	}
	return chunkResult{records: records, ignored: sub.msg.IgnoredTags, ok: true}
}

func (d *decoder) subDecoder(lo, hi int) *decoder {
	return &decoder{
		opts: d.opts,
		scan: newRangeScanner(d.scan.input, lo, hi, schdOpen, len(schdOpen), d.scan.maxDepth),
		msg:  &Message{Kind: d.msg.Kind, Recs: -1},
	}
}

func mergeChunks(results []chunkResult, total int) ([]Record, bool) {
	records := make([]Record, 0, total)
	for _, r := range results {
		if !r.ok {
			return nil, false
		}
		records = append(records, r.records...)
	}
	return records, len(records) == total
}

// crossRecordChecksPass replays the checks the sequential path makes across
// records (count against RECS and MaxRecs, duplicate FLIDs); a failure is
// left to the sequential path to report.
func (d *decoder) crossRecordChecksPass(records []Record, recs int, seen map[flight.FLID]int) bool {
	before := len(d.msg.Records)
	total := before + len(records)
	if total > MaxRecs || (recs >= 0 && total > recs) {
		return false
	}
	if seen == nil {
		return true
	}
	local := make(map[flight.FLID]struct{}, len(records))
	for _, rec := range records {
		if _, dup := seen[rec.FLID]; dup {
			return false
		}
		if _, dup := local[rec.FLID]; dup {
			return false
		}
		local[rec.FLID] = struct{}{}
	}
	return true
}

// splitChunks cuts the FLTR start offsets (relative to base) into at most
// n runs of similar byte size.
func splitChunks(starts []int, base, end, n int) []chunk {
	size := (end - base - starts[0]) / n
	chunks := make([]chunk, 0, n)
	first := 0
	for i := 1; i <= len(starts); i++ {
		last := i == len(starts)
		if !last && (starts[i]-starts[first] < size || len(chunks) == n-1) {
			continue
		}
		hi := end
		if !last {
			hi = base + starts[i]
		}
		chunks = append(chunks, chunk{lo: base + starts[first], hi: hi, firstIndex: first + 1, count: i - first})
		first = i
	}
	return chunks
}

// tagStarts returns the offsets of start tags <name> / <name ...> / <name/>
// in s, which must hold no comment, CDATA or processing instruction.
func tagStarts(s, name string) []int {
	var out []int
	open := "<" + name
	for i := 0; ; {
		j := strings.Index(s[i:], open)
		if j < 0 {
			return out
		}
		at := i + j
		after := at + len(open)
		if after < len(s) && isTagNameEnd(s[after]) {
			out = append(out, at)
		}
		i = after
	}
}

// closingTagIndex returns the offset of the first </name> (or </name >).
func closingTagIndex(s, name string) int {
	closing := "</" + name
	for i := 0; ; {
		j := strings.Index(s[i:], closing)
		if j < 0 {
			return -1
		}
		at := i + j
		after := at + len(closing)
		if after < len(s) && (s[after] == '>' || isSpace(s[after])) {
			return at
		}
		i = after
	}
}

func isTagNameEnd(c byte) bool { return c == '>' || c == '/' || isSpace(c) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isEnd(tok xml.Token, name string) bool {
	end, ok := tok.(xml.EndElement)
	return ok && qualified(end.Name) == name
}

func isBlankBytes(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}
