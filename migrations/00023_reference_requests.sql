-- Reference-data requests (issue 52 point 2): the pump may ask the AODB
-- for whole reference-data lists (RQRD, requests.referenceData). They are
-- recorded in req_track beside the full-day requests, kind 'RQRD:<TYPE>'
-- (RQRD:GLST), so one ledger keeps what every outbound request needs: the
-- one 6-digit SEQN sequence (a starting pump continues from the newest
-- row's, whatever its kind), one live request per kind (per list: a new
-- one expires the old), and the outbound row found again after a crash
-- between inserting it and recording it (sent_at, outbox_id). An RQRD asks
-- for no day: its operation_day is NULL, and only an RQRD's is.

-- +goose Up
ALTER TABLE req_track ALTER COLUMN operation_day DROP NOT NULL;
-- RQRD rows dated by a Down (below) lose that date again.
UPDATE req_track SET operation_day = NULL WHERE kind LIKE 'RQRD:%';
ALTER TABLE req_track ADD CONSTRAINT req_track_day_check CHECK ((operation_day IS NULL) = (kind LIKE 'RQRD:%'));
-- Whether a list was asked for lately (Store.ReferenceAskedSince), read
-- at each round of the reference-data requests.
CREATE INDEX req_track_reference ON req_track (kind, sent_at) WHERE operation_day IS NULL;

-- +goose Down
-- The RQRD rows stay (a SEQN they took is not reused), dated by the day
-- they were opened; no earlier code reads a kind it does not send.
DROP INDEX req_track_reference;
ALTER TABLE req_track DROP CONSTRAINT req_track_day_check;
UPDATE req_track SET operation_day = requested_at::date WHERE operation_day IS NULL;
ALTER TABLE req_track ALTER COLUMN operation_day SET NOT NULL;
