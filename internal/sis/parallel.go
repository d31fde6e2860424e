package sis

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
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

// onChunk lets tests act inside a chunk worker (a panic there).
var onChunk = func(chunk) {}

// WorkerPanic is a panic of a chunk worker, raised again in the goroutine
// that called Decode: a panic in a goroutine of its own would end the
// process, beyond any recover of the caller's. Value is what the worker
// panicked with, Stack the worker's stack at that moment.
type WorkerPanic struct {
	Value any
	Stack []byte
}

// String returns the worker's panic value.
func (p *WorkerPanic) String() string { return fmt.Sprint(p.Value) }

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

// tally is what a decoder has counted against the message-wide limits.
type tally struct {
	scan           scanCounts
	items, ignored int
}

func (d *decoder) tally() tally { return tally{scan: d.scan.seen, items: d.items, ignored: d.ignored} }

// add returns t plus what after counted since from.
func (t tally) add(after, from tally) tally {
	t.scan.elements += after.scan.elements - from.scan.elements
	t.scan.attributes += after.scan.attributes - from.scan.attributes
	t.items += after.items - from.items
	t.ignored += after.ignored - from.ignored
	return t
}

// within reports whether t is inside the message-wide limits.
func (t tally) within(o Options) bool {
	return t.scan.elements <= o.MaxElements && t.scan.attributes <= o.MaxAttributes &&
		t.items <= o.MaxItems && t.ignored <= o.MaxIgnored
}

// sharedTally sums what the chunks count, record by record, so that
// together they stop near a message-wide limit: each chunk on its own only
// knows the counts up to the prefix, and n chunks running up to a limit
// each would cost n times the memory the limit allows.
type sharedTally struct {
	mu    sync.Mutex
	total tally
}

// add adds what a chunk counted from one tally to the next and reports
// whether the message is still within its limits.
func (s *sharedTally) add(now, from tally, o Options) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total = s.total.add(now, from)
	return s.total.within(o)
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
	deferring := d.deferring()
	if (workers < 2 && !deferring) || (len(input) < parallelMinBytes && !deferring) || d.scan.base != 0 || d.opts.SkipRefusedRecords {
		return false
	}
	// Records directly under MSG before <SCHD>: the chunks would number
	// theirs from 1 again, and a deferred message finds its records by
	// their place inside <SCHD>.
	if len(d.msg.Records) > 0 {
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
	// Records after </SCHD> would be held in full beside deferred ones
	// that LoadRecords finds inside <SCHD> only: such a body is not the
	// plain shape DeferRecordsFrom applies to.
	if deferring && len(tagStarts(rest[end:], "FLTR")) > 0 {
		return false
	}
	starts := tagStarts(rest[:end], "FLTR")
	if len(starts) < 2*workers && !deferring {
		return false
	}
	if len(starts) == 0 {
		return false
	}
	prefix, ok := d.decodeSCHDPrefix(st, pos, pos+starts[0])
	if !ok {
		return false
	}
	// Each chunk counts from the prefix's end, a lower bound of the counts
	// at its start: a chunk over a limit is over it in the sequential scan
	// too. The shared sum, exact once all are done, decides the rest.
	chunks := splitChunks(starts, pos, pos+end, workers)
	results := make([]chunkResult, len(chunks))
	shared := &sharedTally{total: prefix.tally}
	panics := make([]*WorkerPanic, len(chunks))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics[i] = &WorkerPanic{Value: r, Stack: debug.Stack()}
				}
			}()
			onChunk(c)
			results[i] = d.decodeChunk(c, prefix.tally, shared, deferring)
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	records, ok := mergeChunks(results, len(starts))
	total := shared.total
	if !ok || !total.within(d.opts) || !d.crossRecordChecksPass(records, prefix.msg.Recs, st.seenFLIDs != nil) {
		return false
	}
	remainder := newRangeScanner(input, pos+end, len(input), d.scan.open, 0, d.scan.lim, total.scan)
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
	if deferring {
		abs := make([]int, len(starts))
		for i, s := range starts {
			abs[i] = pos + s
		}
		d.msg.Positions = &RecordPositions{input: input, starts: abs, end: pos + end, opts: d.opts, lim: d.scan.lim, kind: d.msg.Kind}
	}
	d.scan = remainder
	d.items, d.ignored = total.items, total.ignored
	return true
}

type prefixResult struct {
	msg      *Message
	recsPath string
	tally    tally
}

// decodeSCHDPrefix decodes what precedes the first FLTR (RECS, unmapped
// elements) into scratch state.
func (d *decoder) decodeSCHDPrefix(st *schdState, lo, hi int) (prefixResult, bool) {
	sub := d.subDecoder(lo, hi, d.tally())
	sub.msg.Recs = d.msg.Recs
	scratch := &schdState{recsPath: st.recsPath}
	for {
		tok, err := sub.scan.next()
		if errors.Is(err, io.EOF) {
			return prefixResult{msg: sub.msg, recsPath: scratch.recsPath, tally: sub.tally()}, true
		}
		if err != nil {
			return prefixResult{}, false
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			if qualified(t.Name) == "RECS" {
				err = sub.recs(t, scratch, "MSG/SCHD/RECS")
			} else {
				err = sub.ignoreElement(t)
			}
			if err != nil {
				return prefixResult{}, false
			}
		case tokenText:
			if !isBlankBytes(tok.text) {
				return prefixResult{}, false
			}
		default:
			return prefixResult{}, false
		}
	}
}

// decodeChunk decodes a run of FLTR elements, counting from seed and adding
// its counts to shared after each record; anything else, or a message over
// a limit, fails the chunk. light keeps each record without its commands
// (Options.DeferRecordsFrom).
func (d *decoder) decodeChunk(c chunk, seed tally, shared *sharedTally, light bool) chunkResult {
	sub := d.subDecoder(c.lo, c.hi, seed)
	counted := seed
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
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			if qualified(t.Name) != "FLTR" {
				return chunkResult{}
			}
			index := c.firstIndex + len(records)
			path := fmt.Sprintf("MSG/SCHD/FLTR[%d]", index)
			sub.scan.resetTree()
			n, err := sub.scan.readTree(t, path)
			if err != nil {
				return chunkResult{}
			}
			rec, err := sub.decodeRecord(n, path, index, recordRules{full: full, requireSODT: full})
			if err != nil {
				return chunkResult{}
			}
			if light {
				rec.Cmds = nil
			}
			records = append(records, rec)
			now := sub.tally()
			if !shared.add(now, counted, d.opts) {
				return chunkResult{}
			}
			counted = now
		case tokenText:
			if !isBlankBytes(tok.text) {
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

// deferring reports whether this message's records are decoded without
// their commands (Options.DeferRecordsFrom).
func (d *decoder) deferring() bool {
	return d.msg.Kind == KindSnapshot && d.opts.DeferRecordsFrom > 0 && len(d.scan.input) >= d.opts.DeferRecordsFrom
}

// RecordPositions is what Message.LoadRecords needs to decode a deferred
// message's records again: the input and where each FLTR starts.
type RecordPositions struct {
	input  string
	starts []int // absolute offset of each FLTR start tag
	end    int   // offset of </SCHD>
	opts   Options
	lim    scanLimits
	kind   Kind
}

// Deferred reports whether the message's records carry no commands
// (Options.DeferRecordsFrom): LoadRecords decodes them.
func (m *Message) Deferred() bool { return m.Positions != nil }

// LoadRecords returns records lo..hi-1 (0-based, in input order) in full:
// for a deferred message decoded again from the input, which the decode
// checked whole already; otherwise the held records themselves.
func (m *Message) LoadRecords(lo, hi int) ([]Record, error) {
	if lo < 0 || hi > len(m.Records) || lo > hi {
		return nil, fmt.Errorf("records %d–%d of %d", lo+1, hi, len(m.Records))
	}
	def := m.Positions
	if def == nil {
		return m.Records[lo:hi], nil
	}
	if lo == hi {
		return nil, nil
	}
	// The run is cut into one part per worker, decoded side by side; a
	// worker's panic is raised again here, as Decode raises it.
	parent := &decoder{opts: def.opts, scan: &scanner{input: def.input, lim: def.lim}, msg: &Message{Kind: def.kind}}
	parts := min(parent.workers(), max((hi-lo)/minLoadPart, 1))
	results := make([]chunkResult, parts)
	panics := make([]*WorkerPanic, parts)
	var wg sync.WaitGroup
	for p := range parts {
		from, to := lo+(hi-lo)*p/parts, lo+(hi-lo)*(p+1)/parts
		c := chunk{lo: def.starts[from], hi: def.end, firstIndex: from + 1, count: to - from}
		if to < len(def.starts) {
			c.hi = def.starts[to]
		}
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panics[p] = &WorkerPanic{Value: r, Stack: debug.Stack()}
				}
			}()
			onChunk(c)
			results[p] = parent.decodeChunk(c, tally{}, &sharedTally{}, false)
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	records, ok := mergeChunks(results, hi-lo)
	if !ok {
		return nil, fmt.Errorf("records %d–%d of a checked message no longer decode", lo+1, hi)
	}
	for i, r := range records {
		if r.FLID != m.Records[lo+i].FLID {
			return nil, fmt.Errorf("record %d decoded again as FLID %s, was %s", lo+i+1, r.FLID, m.Records[lo+i].FLID)
		}
	}
	return records, nil
}

// minLoadPart is the fewest records LoadRecords gives one worker.
const minLoadPart = 64

// subDecoder decodes input[lo:hi] inside <SCHD> into scratch state,
// counting against the message-wide limits from seed.
func (d *decoder) subDecoder(lo, hi int, seed tally) *decoder {
	return &decoder{
		opts:  d.opts,
		scan:  newRangeScanner(d.scan.input, lo, hi, schdOpen, len(schdOpen), d.scan.lim, seed.scan),
		msg:   &Message{Kind: d.msg.Kind, Recs: -1},
		items: seed.items, ignored: seed.ignored,
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
// records (count against RECS, MaxRecs and Options.MaxRecords, duplicate
// FLIDs of a snapshot); a failure is left to the sequential path to report.
// No record precedes the chunks' (tryParallelSCHD).
func (d *decoder) crossRecordChecksPass(records []Record, recs int, snapshot bool) bool {
	total := len(records)
	if total > MaxRecs || total > d.opts.MaxRecords || (recs >= 0 && total > recs) {
		return false
	}
	if !snapshot {
		return true
	}
	seen := make(map[flight.FLID]struct{}, len(records))
	for _, rec := range records {
		if _, dup := seen[rec.FLID]; dup {
			return false
		}
		seen[rec.FLID] = struct{}{}
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

func isEnd(tok token, name string) bool { return tok.kind == tokenEnd && tok.raw == name }

func isBlankBytes(b string) bool {
	for _, c := range []byte(b) {
		if !isSpace(c) {
			return false
		}
	}
	return true
}
