package pump

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// requestKind is the one request kind the pump sends: RQFD, full day.
const requestKind = "RQFD"

// requester sends one single-day RQFD per day of the horizon, ascending,
// one after the other (the next when the previous completes or times out),
// and starts a new round every requests.interval (processing rules R10.5). A timed-out
// day is asked once more in the same round. A day whose request FAILED
// (its answers refused the same way twice in a row, refuseAnswer) is held:
// not asked for until an operator re-requests it (`flightfeed rerequest`),
// which the requester sees within heldRecheck.
type requester struct {
	p         *Pump
	queue     []string
	nextRound time.Time
	retried   map[string]bool
	// held are the horizon's days whose request FAILED, by day;
	// heldCheck is when they are read again while there are any.
	held      map[string]pumpdata.FailedRequest
	heldCheck time.Time
}

// heldRecheck is how often the requester looks whether an operator
// re-requested a held day.
const heldRecheck = time.Minute

// tick advances the request state machine; it runs on the pump's FIFO,
// between batches.
func (r *requester) tick(ctx context.Context) error {
	spec := r.p.feed.Spec.Requests
	if spec.Disabled {
		return nil
	}
	now := r.p.clock.Now()
	if !now.Before(r.nextRound) {
		first := r.nextRound.IsZero()
		r.queue = horizon(now, r.p.feed.Location, int(spec.Horizon.From), int(spec.Horizon.To))
		r.retried = map[string]bool{}
		r.nextRound = now.Add(spec.Interval.Duration)
		// A pump that starts again (a restart, a takeover, a crash loop)
		// does not ask again for a day asked for within the last interval
		// — answered, still pending, or timed out — nor resend it after a
		// timeout: each answer is a full-day snapshot of up to 10,000
		// flights for both sides to carry, so a restart storm sends at
		// most one request per day and round. The next round asks for
		// every day again, but a held one.
		if err := r.skipAsked(ctx, now, now.Add(-spec.Interval.Duration), first); err != nil {
			return err
		}
	} else if len(r.held) > 0 && !now.Before(r.heldCheck) {
		if err := r.recheckHeld(ctx, now); err != nil {
			return err
		}
	}
	cur, err := r.p.store.CurrentRequest(ctx, requestKind)
	if err != nil {
		return err
	}
	if cur != nil {
		// The live request (an earlier pump's, opened, perhaps not yet
		// sent, or the last round's) is this round's request for its
		// day: it is reused, not asked for again once it completes.
		r.queue = slices.DeleteFunc(r.queue, func(day string) bool { return day == cur.Day })
	}
	if cur != nil {
		if cur.SentAt.IsZero() {
			return r.send(ctx, cur)
		}
		if now.Sub(cur.SentAt) < spec.Timeout.Duration {
			return nil // waiting for the answer
		}
		if err := r.timeOut(ctx, cur); err != nil {
			return err
		}
		if !r.retried[cur.Day] {
			r.retried[cur.Day] = true
			r.queue = append([]string{cur.Day}, r.queue...)
		}
	}
	if len(r.queue) == 0 {
		return nil
	}
	day := r.queue[0]
	req, err := r.open(ctx, day)
	if err != nil {
		return err
	}
	r.queue = r.queue[1:]
	return r.send(ctx, req)
}

// skipAsked drops from the queue the held days and, in a pump's first
// round, the days asked for (sent) or answered at or after since, marking
// them resent, so a live request among them that times out is not sent
// again this round. On failure the queue is left empty and the round is
// retried at the next tick, so a day is never asked for on a guess.
func (r *requester) skipAsked(ctx context.Context, now, since time.Time, first bool) error {
	asked, err := r.p.store.AskedSince(ctx, requestKind, r.queue, since)
	if err != nil {
		r.queue, r.nextRound = nil, now // the round again, first or not
		if first {
			r.nextRound = time.Time{}
		}
		return err
	}
	kept := r.queue[:0]
	for _, day := range r.queue {
		switch {
		case asked.Failed[day].Day != "":
			r.retried[day] = true
		case first && asked.Asked[day]:
			r.retried[day] = true
		default:
			kept = append(kept, day)
		}
	}
	r.queue = kept
	r.setHeld(asked.Failed, now)
	return nil
}

// recheckHeld reads the held days again: a day an operator re-requested
// is asked for at once (its refusals count from zero).
func (r *requester) recheckHeld(ctx context.Context, now time.Time) error {
	days := make([]string, 0, len(r.held))
	for day := range r.held {
		days = append(days, day)
	}
	slices.Sort(days)
	asked, err := r.p.store.AskedSince(ctx, requestKind, days, now)
	if err != nil {
		r.heldCheck = now.Add(heldRecheck)
		return err
	}
	for _, day := range days {
		if asked.Failed[day].Day == "" && !slices.Contains(r.queue, day) {
			r.p.log.Info("held day re-requested by an operator: asked for again", "day", day)
			r.queue = append([]string{day}, r.queue...)
			r.retried[day] = false
		}
	}
	r.setHeld(asked.Failed, now)
	return nil
}

// setHeld keeps the held days and shows them in the status (and so the
// metric and the alert).
func (r *requester) setHeld(failed map[string]pumpdata.FailedRequest, now time.Time) {
	r.held = failed
	r.heldCheck = now.Add(heldRecheck)
	list := make([]pumpdata.FailedRequest, 0, len(failed))
	for _, f := range failed {
		list = append(list, f)
	}
	slices.SortFunc(list, func(a, b pumpdata.FailedRequest) int { return strings.Compare(a.Day, b.Day) })
	r.p.update(func(s *Status) { s.FailedRequests = list })
}

// requestsFailed notices the requests a committed batch (or replay) ended
// FAILED: a warning Event, the status (so the metric and the alert), and
// the requester holds the day from now on.
func (p *Pump) requestsFailed(done []outcome) {
	for _, o := range done {
		f := o.requestFailed
		if f == nil {
			continue
		}
		p.log.Info("full-day request given up: its answers were refused the same way twice; the day is not asked for again until an operator re-requests it",
			"day", f.Day, "msg_id", f.MessageID, "refusal", f.Rejection)
		held := maps.Clone(p.reqs.held)
		if held == nil {
			held = map[string]pumpdata.FailedRequest{}
		}
		held[f.Day] = *f
		p.reqs.setHeld(held, p.clock.Now())
		p.update(func(*Status) {
			p.addNotice(Notice{Kind: NoticeRequestFailed, MessageID: f.MessageID, Reason: pumpdata.RequestFailed,
				Detail: fmt.Sprintf("full-day request for %s given up after %d identical refusals of its answers: %s; re-request the day once the cause is fixed (flightfeed rerequest --day %s)",
					f.Day, snapshot.MaxIdenticalRejections, f.Rejection, f.Day)})
		})
	}
}

// horizon lists the airport-local days today+from … today+to.
func horizon(now time.Time, loc *time.Location, from, to int) []string {
	local := now.In(loc)
	today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	var days []string
	for d := from; d <= to; d++ {
		days = append(days, today.AddDate(0, 0, d).Format(time.DateOnly))
	}
	return days
}

// dayRange is the RQFD range of a day: 00:00 to 23:59 airport-local.
func dayRange(day string, loc *time.Location) (time.Time, time.Time, error) {
	start, err := time.ParseInLocation(time.DateOnly, day, loc)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("request day %q: %w", day, err)
	}
	return start, start.Add(24*time.Hour - time.Minute), nil
}

func (r *requester) open(ctx context.Context, day string) (*pumpdata.Request, error) {
	start, end, err := dayRange(day, r.p.feed.Location)
	if err != nil {
		return nil, err
	}
	tx, err := r.p.store.Begin(ctx, r.p.epoch)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	seqn := r.p.seqn.Next()
	req, err := tx.OpenRequest(ctx, requestKind, day, r.p.feed.Spec.Requests.Receiver, flight.FormatSISTime(start, r.p.feed.Location),
		flight.FormatSISTime(end, r.p.feed.Location), r.p.feed.Spec.Requests.RoutingID, int(seqn))
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return req, nil
}

// send writes the request into the mailbox's outbound table and records it.
func (r *requester) send(ctx context.Context, req *pumpdata.Request) error {
	spec := r.p.feed.Spec.Requests
	start, end, err := dayRange(req.Day, r.p.feed.Location)
	if err != nil {
		return err
	}
	return r.p.sendRequest(ctx, req, spec.RoutingID, "full-day request", func(meta sis.RequestMeta) ([]byte, error) {
		body, err := sis.EncodeRQFD(meta, start, end)
		if err != nil {
			return nil, fmt.Errorf("encode request for %s: %w", req.Day, err)
		}
		return body, nil
	}, "day", req.Day)
}

// sendRequest writes request req into the mailbox's outbound table under
// routingID, its body from encode (given the request's META), and records
// it sent; what names the request in the log, with keysAndValues.
func (p *Pump) sendRequest(ctx context.Context, req *pumpdata.Request, routingID, what string,
	encode func(sis.RequestMeta) ([]byte, error), keysAndValues ...any) error {
	spec := p.feed.Spec.Requests
	now := p.clock.Now()
	// A pump that died between inserting the request and recording it
	// left it in the outbound table: it is recorded, not sent twice (the
	// AODB would answer both, each with a full-day snapshot or a whole
	// list).
	seqn := sis.Seqn(req.Seqn) //nolint:gosec // 1..999999
	outID, found, err := p.mbox.FindRequest(ctx, routingID, seqn.String(), req.RequestedAt.Add(-requestClockSkew))
	if err != nil {
		return err
	}
	if found {
		if err := p.store.RequestSent(ctx, req.ID, outID, now); err != nil {
			return err
		}
		p.log.Info(what+" found already sent", append(keysAndValues, "seqn", req.Seqn, "outbound_id", outID)...)
		return nil
	}
	body, err := encode(sis.RequestMeta{Sndr: spec.Sender, Rcvr: spec.Receiver, Seqn: seqn, Time: now, Location: p.feed.Location})
	if err != nil {
		return err
	}
	outID, err = p.mbox.SendRequest(ctx, routingID, body, now)
	if err != nil {
		return err
	}
	if err := p.store.RequestSent(ctx, req.ID, outID, now); err != nil {
		return err
	}
	p.log.Info(what+" sent", append(keysAndValues, "seqn", req.Seqn, "outbound_id", outID)...)
	return nil
}

// requestClockSkew is a margin before the request's opening for its
// outbound row's date: both come from the pump's clock, the row's later,
// but the pump that opened the request may have run on another host.
const requestClockSkew = time.Minute

func (r *requester) timeOut(ctx context.Context, req *pumpdata.Request) error {
	tx, err := r.p.store.Begin(ctx, r.p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.SettleRequest(ctx, req.ID, pumpdata.RequestSettlement{Status: pumpdata.RequestTimedOut}); err != nil {
		return err
	}
	r.p.log.Info("full-day request timed out", "day", req.Day, "seqn", req.Seqn)
	return tx.Commit(ctx)
}
