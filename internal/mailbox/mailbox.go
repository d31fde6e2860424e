package mailbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// identifier is at most 64 bytes (checked apart: a counted repetition
// compiles to that many copies of its class).
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// NoteMaxChars is the width of the default note column (VARCHAR(512)).
// Longer notes are cut with an explicit marker; the full text stays in
// proc_state.
const NoteMaxChars = 512

// Row is one inbound mailbox row at the FIFO head: the pump's type
// (pumpdata.Row), which this adapter fills.
type Row = pumpdata.Row

// Mailbox is one feed's shared mailbox.
type Mailbox struct {
	db          *sql.DB
	validStatus string
	q           queries
	// noteExpr is the SQL expression of a note parameter, converted to the
	// note column's character set when that is not UTF-8 (see noteExpression).
	noteExpr string
	// maxFetch is the largest body the server can send in one packet
	// (max_allowed_packet less a margin; 0 when unknown).
	maxFetch int64
	// bound limits what the server may send on each connection (bound.go).
	bound *bound
}

type queries struct {
	head, bodies, depth, backfill, request, findRequest string
	// The AODB side (aodb.go).
	put, unsent, markSent string
	// The body as UTF-8 text (converted by the server) and as stored.
	utf8Body, rawBody string
	// idColumn is the inbound table's id column, quoted.
	idColumn string
}

// Open connects to the mailbox. Times are read and written in UTC unless
// the DSN names another loc. A DSN option that would let the server read
// local files or weaken the connection (allowAllFiles, tls=skip-verify
// without mailbox.tls's opt-in…, config.MailboxConfig) is refused before
// anything is dialled.
func Open(ctx context.Context, dsn string, spec v1alpha1.MailboxSpec, opts ...Option) (*Mailbox, error) {
	cfg, err := config.MailboxConfig(dsn, spec.TLS)
	if err != nil {
		return nil, dsnError(dsn, "parse mailbox DSN %s: %w", redactDSN(dsn), err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	applyTLS(cfg, o.tls)
	cfg.ParseTime = true
	if cfg.Loc == nil {
		cfg.Loc = time.UTC
	}
	// A mailbox server that stops answering (stalled, or a network path
	// that holds the connection and carries nothing) fails the call after
	// this much silence instead of holding the head for ever without a
	// word; the DSN's own readTimeout/writeTimeout win.
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = ioTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = ioTimeout
	}
	interpolate(cfg, dsn)
	q, err := buildQueries(spec)
	if err != nil {
		return nil, err
	}
	// Every connection is dialled under the feed's byte bound (bound.go).
	b := newBound(spec)
	cfg.DialFunc = b.dial
	// The connector uses cfg as checked and forced, not a re-parsed text.
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, dsnError(dsn, "open mailbox: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(MaxConns)
	db.SetConnMaxIdleTime(time.Minute)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, dsnError(dsn, "connect to mailbox %s/%s: %w", cfg.Addr, cfg.DBName, &unreachableError{b.explain(err)})
	}
	m := &Mailbox{db: db, validStatus: spec.Inbound.ValidStatus, q: q, bound: b}
	m.noteExpr = m.noteExpression(ctx, spec.Inbound)
	if m.bodyAsStored(ctx, spec.Inbound) {
		// Converting bytes "USING utf8mb4" replaces every byte that is not
		// UTF-8 with '?', silently: the decoder must see them (toUTF8
		// reads a declared GBK, refuses anything else), so a binary body
		// column is read as it is. A UTF-8 column's bytes are already
		// what the conversion would give: read as stored, they spare the
		// server a conversion per row in the head's LENGTH and the bodies.
		m.q.head = strings.ReplaceAll(m.q.head, m.q.utf8Body, m.q.rawBody)
		m.q.bodies = strings.ReplaceAll(m.q.bodies, m.q.utf8Body, m.q.rawBody)
	}
	m.maxFetch = m.packetLimit(ctx)
	return m, nil
}

// Option changes how Open connects.
type Option func(*options)

type options struct{ tls *tls.Config }

// WithTLS connects with cfg (config.Feed.MailboxTLS), verified, whatever
// the DSN's tls option says; its ServerName defaults to the DSN's host.
// nil changes nothing.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// OpenFeed opens the feed's mailbox with its mailbox.tls.
func OpenFeed(ctx context.Context, feed *config.Feed) (*Mailbox, error) {
	t, err := feed.MailboxTLS()
	if err != nil {
		return nil, err
	}
	return Open(ctx, feed.Secrets.MailboxDSN, feed.Spec.Mailbox, WithTLS(t))
}

// applyTLS puts t, cloned, on cfg in place of the DSN's tls option, its
// ServerName defaulting to the DSN's host. nil t changes nothing.
func applyTLS(cfg *mysql.Config, t *tls.Config) {
	if t == nil {
		return
	}
	cfg.TLS = t.Clone()
	cfg.TLSConfig = ""
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && cfg.TLS.ServerName == "" {
		cfg.TLS.ServerName = host
	}
}

// DefaultIOTimeout is the mailbox connection's readTimeout and
// writeTimeout when the DSN sets none: silence on the connection for this
// long fails the call (the head then waits with backoff and the pump says
// the mailbox is unreachable). It is longer than MariaDB's default
// innodb_lock_wait_timeout (50 s), so a write-back waiting for a row lock
// the AODB holds gets the server's own answer first.
const DefaultIOTimeout = 60 * time.Second

// ioTimeout is DefaultIOTimeout (tests shorten it).
var ioTimeout = DefaultIOTimeout

// FeedConnector is a driver connector to the feed's mailbox as Open makes
// it (the DSN checked, mailbox.tls applied), for SQL of its own (the
// mailbox DDL of `flightfeed simulate --create-mailbox`). Its errors quote
// no credential.
func FeedConnector(feed *config.Feed) (driver.Connector, error) {
	dsn := feed.Secrets.MailboxDSN
	cfg, err := config.MailboxConfig(dsn, feed.Spec.Mailbox.TLS)
	if err != nil {
		return nil, dsnError(dsn, "parse mailbox DSN %s: %w", redactDSN(dsn), err)
	}
	t, err := feed.MailboxTLS()
	if err != nil {
		return nil, err
	}
	applyTLS(cfg, t)
	cfg.DialFunc = newBound(feed.Spec.Mailbox).dial
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, dsnError(dsn, "open mailbox: %w", err)
	}
	return conn, nil
}

// interpolate lets the driver put the arguments into the statement text,
// so a statement is one round trip instead of three (prepare, execute,
// close): MariaDB spends a fifth less CPU on a backlog (make bench). The driver
// refuses it with a connection character set that is unsafe for
// backslash escaping (GBK, Big5, SJIS…), and a DSN that says
// interpolateParams itself is followed as written.
func interpolate(cfg *mysql.Config, dsn string) {
	if strings.Contains(dsn, "interpolateParams=") {
		return
	}
	cfg.InterpolateParams = true
	if _, err := mysql.ParseDSN(cfg.FormatDSN()); err != nil {
		cfg.InterpolateParams = false
	}
}

// charsetName is a MySQL character set name as information_schema gives it.
var charsetName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// noteExpression returns the placeholder for a note value. A note column
// in a character set other than UTF-8 (GBK, Latin-1 in older AODB
// installations) gets the note converted by CONVERT(… USING cs), which
// replaces a character the set cannot hold with '?': assigning the UTF-8
// text directly fails in strict mode ("Incorrect string value") and would
// keep the write-back failing for good. When the column cannot be looked
// up, the plain placeholder stays.
func (m *Mailbox) noteExpression(ctx context.Context, in v1alpha1.InboundTableSpec) string {
	var cs sql.NullString
	err := m.db.QueryRowContext(ctx, `SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, in.Table, in.NoteColumn).Scan(&cs)
	if err != nil || !cs.Valid || strings.HasPrefix(cs.String, "utf8") || !charsetName.MatchString(cs.String) {
		return "?"
	}
	return "CONVERT(? USING " + cs.String + ")"
}

// packetMargin is what a row needs beside its body in one packet.
const packetMargin = 4 << 10

// packetLimit returns the largest body the server will send: a row larger
// than max_allowed_packet fails the whole read ("packet bigger than
// max_allowed_packet"), which would block the head for good, so a body
// beyond it is read only up to it and refused as oversize.
func (m *Mailbox) packetLimit(ctx context.Context) int64 {
	var packet int64
	if err := m.db.QueryRowContext(ctx, `SELECT @@max_allowed_packet`).Scan(&packet); err != nil || packet <= 2*packetMargin {
		return 0
	}
	return packet - packetMargin
}

// Close releases the connections.
func (m *Mailbox) Close() error { return m.db.Close() }

func quote(name string) (string, error) {
	if len(name) > 64 || !identifier.MatchString(name) {
		return "", fmt.Errorf("mailbox identifier %q is not a plain SQL identifier", name)
	}
	return "`" + name + "`", nil
}

// bodyAsStored reports whether the body column's bytes are read as they
// are stored: bytes (a BLOB, or text in the binary character set, which
// information_schema shows as a column without a character set), or text
// already in UTF-8 (utf8mb4, or utf8mb3 whose bytes are UTF-8 too). Any
// other character set (GBK, Latin-1) is converted by the server.
func (m *Mailbox) bodyAsStored(ctx context.Context, in v1alpha1.InboundTableSpec) bool {
	var cs sql.NullString
	err := m.db.QueryRowContext(ctx, `SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, in.Table, in.BodyColumn).Scan(&cs)
	if err != nil {
		return false
	}
	switch cs.String {
	case "", "binary", "utf8mb4", "utf8mb3", "utf8":
		return true
	}
	return false
}

func buildQueries(spec v1alpha1.MailboxSpec) (queries, error) {
	in, out := spec.Inbound, spec.Outbound
	names := []string{in.Table, in.IDColumn, in.DateReceivedColumn, in.DateProcessedColumn, in.StatusColumn,
		in.BodyColumn, in.ResultColumn, in.NoteColumn, out.Table, out.DateInsertedColumn,
		out.RoutingIDColumn, out.BodyColumn, out.IDColumn, out.DateSentColumn}
	quoted := make([]string, len(names))
	for i, n := range names {
		q, err := quote(n)
		if err != nil {
			return queries{}, err
		}
		quoted[i] = q
	}
	t, id, recv, done, status, body, result, note := quoted[0], quoted[1], quoted[2], quoted[3], quoted[4], quoted[5], quoted[6], quoted[7]
	utf8Body := "CONVERT(" + body + " USING utf8mb4)"
	ot, oins, orout, obody, oid, osent := quoted[8], quoted[9], quoted[10], quoted[11], quoted[12], quoted[13]
	head := " FROM " + t + " WHERE " + done + " IS NULL AND " + status + " = ?"
	return queries{
		utf8Body: utf8Body, rawBody: body,
		// Sizes are of the UTF-8 text the pump is given (see bodies). A
		// body of at most the first parameter's bytes comes with the head
		// itself (Head), so most rows are read once. %s leaves out the
		// rows being applied (notIn): the server drops them from the FIFO
		// index's entries, without reading their rows.
		head: "SELECT " + id + ", " + recv + ", LENGTH(" + utf8Body + "), " + body + " IS NULL, IF(LENGTH(" + utf8Body + ") <= ?, CAST(" +
			utf8Body + " AS BINARY), NULL)" + head + "%s ORDER BY " + recv + ", " + id + " LIMIT ?",
		// The body is converted by the server from the column's character
		// set to UTF-8 (a no-op for utf8mb4 columns; GBK or Latin-1 columns
		// of older AODB installations arrive as the same text in UTF-8),
		// then sent as bytes so nothing on the way re-encodes it; SUBSTRING
		// cuts it at the fetch limit (a shorter body comes whole), so the
		// conversion runs once per row.
		bodies: "SELECT " + id + ", " + body + " IS NULL, SUBSTRING(CAST(" + utf8Body + " AS BINARY), 1, ?) FROM " + t +
			" WHERE " + id + " IN (%s)",
		depth: "SELECT COUNT(*), MIN(" + recv + ")" + head,
		// One single-table statement per batch: the rows are found by
		// primary key from the (id, received) pairs, which also keep a
		// result off a later row that reused the id; each column's values
		// are constants, or ELT(INTERVAL(id, …)) over the runs of equal
		// values in id order (Backfill), a binary search per row. A join
		// with a derived table of the values cost the server twice as much:
		// a SELECT to parse per row, a temporary table, every row read twice.
		backfill: "UPDATE " + t + " SET " + done + " = %s, " + result + " = %s, " + note + " = %s WHERE " + id + " IN (%s) AND (" + id + ", " + recv + ") IN (%s)",
		idColumn: id,
		request:  "INSERT INTO " + ot + " (" + oins + ", " + orout + ", " + obody + ") VALUES (?, ?, ?)",
		findRequest: "SELECT " + oid + " FROM " + ot + " WHERE " + orout + " = ? AND " + oins + " >= ? AND " + obody + " LIKE ?" +
			" ORDER BY " + oid + " DESC LIMIT 1",
		put:      "INSERT INTO " + t + " (" + recv + ", " + status + ", " + body + ") VALUES (?, ?, ?)",
		unsent:   "SELECT " + oid + ", " + obody + " FROM " + ot + " WHERE " + osent + " IS NULL ORDER BY " + oid,
		markSent: "UPDATE " + ot + " SET " + osent + " = ? WHERE " + oid + " = ?",
	}, nil
}

// Head returns up to limit unprocessed VALID rows in FIFO order
// (DATE_RECEIVED, ID), without the rows in skip: the rows of a batch that
// is being applied while the next one is read ahead (the server leaves
// them out as it walks the FIFO index, without reading them). Bodies are
// fetched while their total stays within budget bytes; a read that skips
// nothing always takes its first row, however large, so the head moves
// on, while a read ahead takes only what fits beside the batch being
// applied. A body larger than maxBytes is fetched only up to maxBytes and
// marked Truncated, so an oversize message never has to fit in memory.
// maxBytes must not exceed the mailbox.maxMessageBytes given to Open (plus
// BoundMargin): a larger body fails the connection as a server crossing
// its bound (bound.go).
//
// The head's rows come with their bodies when these are small: at most
// budget/limit bytes each, so the whole answer stays within budget (and
// the connection's answer bound). Larger bodies taken are fetched by id
// in a second statement.
//
// more reports that the head may hold rows the read did not take: it took
// limit rows, or the byte budget left a row out. A read without more took
// every row the head held when it was read, so the pump reads nothing
// ahead of it (the next row, if any, is still to arrive).
func (m *Mailbox) Head(ctx context.Context, limit int, budget, maxBytes int64, skip map[int64]bool) (head []Row, more bool, err error) {
	packetLimited := m.maxFetch > 0 && m.maxFetch < maxBytes
	if packetLimited {
		maxBytes = m.maxFetch
	}
	if limit <= 0 {
		return nil, true, nil
	}
	inline := max(min(maxBytes, budget/int64(limit)), 0)
	args := make([]any, 0, 3+len(skip))
	args = append(args, inline, m.validStatus)
	notIn := m.notIn(skip, &args)
	args = append(args, limit)
	rows, err := m.db.QueryContext(ctx, fmt.Sprintf(m.q.head, notIn), args...)
	if err != nil {
		return nil, false, fmt.Errorf("read mailbox head: %w", m.bound.explain(err))
	}
	defer func() { _ = rows.Close() }()
	var total int64
	fetch := 0 // rows whose body is still to be read
	for rows.Next() {
		var r Row
		var size sql.NullInt64
		var body sql.RawBytes
		if err := rows.Scan(&r.ID, &r.Received, &size, &r.Null, &body); err != nil {
			return nil, false, fmt.Errorf("read mailbox head: %w", m.bound.explain(err))
		}
		if skip[r.ID] {
			continue
		}
		if len(head) == limit {
			break // more: said below, as for a statement cut by its LIMIT
		}
		r.Size = size.Int64
		take := min(r.Size, maxBytes)
		if (len(head) > 0 || len(skip) > 0) && total+take > budget {
			more = true
			break
		}
		total += take
		r.Truncated = r.Size > maxBytes
		r.PacketLimited = r.Truncated && packetLimited
		switch {
		case r.Null:
		case body != nil:
			r.Body = bytes.Clone(body)
		default:
			fetch++
		}
		head = append(head, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read mailbox head: %w", m.bound.explain(err))
	}
	if err := rows.Close(); err != nil {
		return nil, false, fmt.Errorf("read mailbox head: %w", m.bound.explain(err))
	}
	// The statement's LIMIT stops at limit rows: whether one follows is
	// not known, so a full read says more.
	more = more || len(head) == limit
	if fetch == 0 {
		return head, more, nil
	}
	if err := m.fillBodies(ctx, head, maxBytes); err != nil {
		return head, more, err
	}
	return head, more, nil
}

// inChunk is the most values of one IN list: MariaDB turns a list of
// in_predicate_conversion_threshold (1000) values or more into a subquery
// over a table value constructor, which for the head's NOT IN is checked
// row by row after the row is read instead of on the index entry.
const inChunk = 500

// notIn returns the head's condition leaving out the ids in skip (sorted,
// in lists of at most inChunk), appending them to args; "" for none.
func (m *Mailbox) notIn(skip map[int64]bool, args *[]any) string {
	if len(skip) == 0 {
		return ""
	}
	ids := make([]int64, 0, len(skip))
	for id := range skip {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for start := 0; start < len(ids); start += inChunk {
		chunk := ids[start:min(start+inChunk, len(ids))]
		b.WriteString(" AND " + m.q.idColumn + " NOT IN (")
		for i, id := range chunk {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("?")
			*args = append(*args, id)
		}
		b.WriteString(")")
	}
	return b.String()
}

// fillBodies reads the bodies of the rows of head that have none yet (and
// are not NULL), each up to maxBytes.
func (m *Mailbox) fillBodies(ctx context.Context, head []Row, maxBytes int64) error {
	args := []any{maxBytes}
	var marks []string
	index := make(map[int64]int)
	for i, r := range head {
		if r.Null || r.Body != nil {
			continue
		}
		marks = append(marks, "?")
		args = append(args, r.ID)
		index[r.ID] = i
	}
	rows, err := m.db.QueryContext(ctx, fmt.Sprintf(m.q.bodies, strings.Join(marks, ",")), args...)
	if err != nil {
		return fmt.Errorf("read mailbox bodies: %w", m.bound.explain(err))
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var null bool
		var body []byte
		if err := rows.Scan(&id, &null, &body); err != nil {
			return fmt.Errorf("read mailbox bodies: %w", m.bound.explain(err))
		}
		if i, ok := index[id]; ok {
			head[i].Body, head[i].Null = body, null
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read mailbox bodies: %w", m.bound.explain(err))
	}
	return nil
}

// Depth counts unprocessed VALID rows and returns the oldest one's receipt.
func (m *Mailbox) Depth(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var oldest sql.NullTime
	if err := m.db.QueryRowContext(ctx, m.q.depth, m.validStatus).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count mailbox head: %w", m.bound.explain(err))
	}
	return n, oldest.Time, nil
}

// Backfill writes the results of a batch back with one statement, each
// only to the row with its id and its received time (never to a later row
// that reused the id after the mailbox's ids restarted). A result whose id
// comes again later in results is written by a statement of its own after
// the first (the later one wins).
func (m *Mailbox) Backfill(ctx context.Context, results []pumpdata.Backfill) error {
	for _, layer := range uniqueIDs(results) {
		stmt, args := m.backfillStatement(layer)
		if _, err := m.db.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("backfill %d mailbox rows: %w", len(results), m.bound.explain(err))
		}
	}
	return nil
}

// uniqueIDs splits results into lists of distinct ids, each sorted by id:
// the first time an id comes goes to the first list, the second time to
// the second, and so on.
func uniqueIDs(results []pumpdata.Backfill) [][]pumpdata.Backfill {
	var layers [][]pumpdata.Backfill
	seen := make(map[int64]int, len(results))
	for _, r := range results {
		n := seen[r.MessageID]
		seen[r.MessageID] = n + 1
		if n == len(layers) {
			layers = append(layers, make([]pumpdata.Backfill, 0, len(results)))
		}
		layers[n] = append(layers[n], r)
	}
	for _, l := range layers {
		slices.SortFunc(l, func(a, b pumpdata.Backfill) int { return cmp.Compare(a.MessageID, b.MessageID) })
	}
	return layers
}

// backfillStatement is the UPDATE of results (distinct ids, sorted by id)
// and its arguments. A column whose value is the same for every row is set
// to it; otherwise to ELT(INTERVAL(id, b1, b2, …), v1, v2, …): bi is the
// first id of the i-th run of rows with the same value vi, and INTERVAL
// finds the run of an id by binary search.
func (m *Mailbox) backfillStatement(results []pumpdata.Backfill) (string, []any) {
	var args []any
	column := func(mark string, value func(pumpdata.Backfill) any) string {
		var starts []int
		for i, r := range results {
			if i == 0 || value(r) != value(results[i-1]) {
				starts = append(starts, i)
			}
		}
		if len(starts) == 1 {
			args = append(args, value(results[0]))
			return mark
		}
		var b strings.Builder
		b.WriteString("ELT(INTERVAL(" + m.q.idColumn)
		for _, i := range starts {
			b.WriteString(", ?")
			args = append(args, results[i].MessageID)
		}
		b.WriteString(")")
		for _, i := range starts {
			b.WriteString(", " + mark)
			args = append(args, value(results[i]))
		}
		b.WriteString(")")
		return b.String()
	}
	done := column("?", func(r pumpdata.Backfill) any { return r.Processed.UTC() })
	result := column("?", func(r pumpdata.Backfill) any { return r.Result })
	note := column(m.noteExpr, func(r pumpdata.Backfill) any {
		if r.Note == "" {
			return nil
		}
		return FitNote(r.Note)
	})
	// The id list beside the pairs: MariaDB finds the rows of a row
	// constructor's IN by primary key only when it has two or more pairs;
	// one pair (a quiet feed's batch of one) scanned the whole table.
	marks := make([]string, len(results))
	for i, r := range results {
		marks[i] = "?"
		args = append(args, r.MessageID)
	}
	pairs := make([]string, len(results))
	for i, r := range results {
		pairs[i] = "(?, ?)"
		args = append(args, r.MessageID, r.Received)
	}
	return fmt.Sprintf(m.q.backfill, done, result, note, strings.Join(marks, ", "), strings.Join(pairs, ", ")), args
}

// SendRequest inserts an outbound message and returns its row id.
func (m *Mailbox) SendRequest(ctx context.Context, routingID string, body []byte, now time.Time) (int64, error) {
	res, err := m.db.ExecContext(ctx, m.q.request, now.UTC(), routingID, string(body))
	if err != nil {
		return 0, fmt.Errorf("insert outbound request: %w", m.bound.explain(err))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert outbound request: %w", m.bound.explain(err))
	}
	return id, nil
}

// FindRequest looks for an outbound request of routingID inserted at or
// after since whose body carries the SEQN seqn (as sis.Seqn prints it):
// a request whose insert committed while the pump died before recording
// it. It returns the row's id, or found false.
func (m *Mailbox) FindRequest(ctx context.Context, routingID, seqn string, since time.Time) (id int64, found bool, err error) {
	err = m.db.QueryRowContext(ctx, m.q.findRequest, routingID, since.UTC(), "%<SEQN>"+seqn+"</SEQN>%").Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("look for an outbound request with SEQN %s: %w", seqn, m.bound.explain(err))
	}
	return id, true, nil
}

// FitNote makes a note fit the mailbox's note column: valid UTF-8, at most
// NoteMaxChars characters, cut with a visible "…[cut]" marker when longer.
func FitNote(note string) string {
	note = strings.ToValidUTF8(strings.ReplaceAll(note, "\x00", ""), "\uFFFD")
	if utf8.RuneCountInString(note) <= NoteMaxChars {
		return note
	}
	const marker = "…[cut]"
	keep := NoteMaxChars - utf8.RuneCountInString(marker)
	runes := []rune(note)
	return string(runes[:keep]) + marker
}

// ErrUnreachable is in the chain of an error of Open when the mailbox did
// not answer as a MySQL server should (refused, timed out, or beyond the
// connection's byte bound): the pod reports MailboxReachable=False.
var ErrUnreachable = errors.New("mailbox unreachable")

// unreachableError marks a connection failure as ErrUnreachable, with the
// driver's error as its text and its chain.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string        { return e.err.Error() }
func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

// IsUnavailable reports whether err means the mailbox could not be reached
// (as opposed to a statement it refused).
func IsUnavailable(err error) bool {
	var me *mysql.MySQLError
	return err != nil && !errors.As(err, &me)
}
