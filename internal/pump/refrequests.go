package pump

import (
	"context"
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// refRequester sends the reference-data requests (RQRD,
// requests.referenceData): in rounds, the first when the
// pump starts leading (before the first mailbox row is processed, as the
// full-day requests) and then every requests.referenceData.interval, one
// request per configured list that was neither asked for (an RQRD sent or
// answered) nor replaced whole (a DNLD or RESP, requested or not) within
// the interval, so a pump that starts again (a restart, a takeover, a
// crash loop) does not ask again for what it, or the AODB on its own,
// sent lately. The lists are asked for together, each with a request of
// its own (a live request per list); one left unanswered is asked for
// again at the next round, not after requests.timeout. The answer, a RESP
// of the list, completes it in its message's transaction
// (completeReferenceRequest).
type refRequester struct {
	p *Pump
	// types are the lists asked for (SIS TYPEs, sorted), none when off.
	types     []string
	nextRound time.Time
}

// tick runs a round when one is due; on the pump's FIFO, between batches.
// A round that fails part way is run again at the next tick: the lists it
// asked for are skipped then.
func (r *refRequester) tick(ctx context.Context) error {
	spec := r.p.feed.Spec.Requests
	if spec.Disabled || len(r.types) == 0 {
		return nil
	}
	now := r.p.clock.Now()
	if now.Before(r.nextRound) {
		return nil
	}
	interval := spec.ReferenceData.Interval.Duration
	asked, err := r.p.store.AskedSince(ctx, pumpdata.RequestKindRQRD, r.types, now.Add(-interval))
	if err != nil {
		return err
	}
	for _, typ := range r.types {
		if asked.Asked[typ] {
			continue
		}
		if err := r.ask(ctx, typ); err != nil {
			return err
		}
	}
	r.nextRound = now.Add(interval)
	return nil
}

// ask sends the request for the list of typ: the list's live request when
// it was opened and not recorded sent (a pump stopped in between: sent
// unless the outbound table holds it already), else a new one, which
// expires a live one left unanswered.
func (r *refRequester) ask(ctx context.Context, typ string) error {
	kind := pumpdata.ReferenceRequestKind(typ)
	req, err := r.p.store.CurrentRequest(ctx, kind)
	if err != nil {
		return err
	}
	if req == nil || !req.SentAt.IsZero() {
		if req, err = r.open(ctx, kind); err != nil {
			return err
		}
	}
	return r.p.sendRequest(ctx, req, r.p.feed.ReferenceRoutingID, "reference-data request",
		func(meta sis.RequestMeta) ([]byte, error) { return sis.EncodeRQRD(meta, typ) }, "type", typ)
}

func (r *refRequester) open(ctx context.Context, kind string) (*pumpdata.Request, error) {
	spec := r.p.feed.Spec.Requests
	tx, err := r.p.store.Begin(ctx, r.p.epoch)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	req, err := tx.OpenRequest(ctx, kind, "", spec.Receiver, "", "", r.p.feed.ReferenceRoutingID, int(r.p.seqn.Next()))
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return req, nil
}

// completeReferenceRequest ends the live request for the list of a
// reference-data RESP COMPLETED by it, in the message's transaction, when
// the RESP answers it: it comes from the request's receiver (answeredBy).
// A RESP that answers no request is applied all the same: it is the whole
// list.
func (p *Pump) completeReferenceRequest(ctx context.Context, tx Tx, msg *sis.Message, id int64) error {
	if msg.Meta.Styp != sis.StypRESP {
		return nil
	}
	req, err := tx.CurrentRequest(ctx, pumpdata.ReferenceRequestKind(msg.Reference.Kind.Type))
	if err != nil || !answeredBy(req, msg.Meta) {
		return err
	}
	return tx.SettleRequest(ctx, req.ID, pumpdata.RequestSettlement{Status: pumpdata.RequestCompleted, MessageID: id})
}
