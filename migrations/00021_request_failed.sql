-- A full-day request whose answers keep being refused the same way is
-- given up (issue 39 item 6): a RESP that straddles midnight is refused
-- whole (seed 000 §5.2, validation five), and so is the AODB's answer to
-- every re-ask. rejections counts the identical refusals in a row of the
-- answers to the day's requests (a re-ask carries the count of the
-- request it follows unless that one was answered), rejection is the
-- refusal (reason code and detail); the second identical refusal ends the
-- request FAILED, and the pump asks for that day no more until an operator
-- re-requests it (`flightfeed rerequest`), which sets released_at.

-- +goose Up
ALTER TABLE req_track DROP CONSTRAINT req_track_status_check,
    ADD CONSTRAINT req_track_status_check
        CHECK (status IN ('PENDING', 'COMPLETED', 'EXPIRED', 'TIMED_OUT', 'FAILED')),
    ADD COLUMN rejections integer NOT NULL DEFAULT 0 CHECK (rejections >= 0),
    ADD COLUMN rejection text,
    ADD COLUMN released_at timestamptz;
CREATE INDEX req_track_failed ON req_track (kind, operation_day) WHERE status = 'FAILED' AND released_at IS NULL;

-- +goose Down
DROP INDEX req_track_failed;
UPDATE req_track SET status = 'TIMED_OUT' WHERE status = 'FAILED';
ALTER TABLE req_track DROP COLUMN released_at, DROP COLUMN rejection, DROP COLUMN rejections,
    DROP CONSTRAINT req_track_status_check,
    ADD CONSTRAINT req_track_status_check CHECK (status IN ('PENDING', 'COMPLETED', 'EXPIRED', 'TIMED_OUT'));
