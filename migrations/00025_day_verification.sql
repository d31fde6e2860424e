-- The last verification of each operation day: `flightfeed verify` (from a
-- workstation, or through the read API in a pump pod) rebuilds the day from
-- its archived messages and records here what it found, so the day's
-- FlightFeedDay and `kubectl flightfeed days` can say when the served day
-- was last proven against its archive and with what outcome. One row per
-- day (a new verification replaces the last); rows go with the trace log's
-- retention (retention.traceDays).

-- +goose Up
CREATE TABLE day_verification (
    operation_day date        PRIMARY KEY,
    -- IDENTICAL: every flight and the ledger equal their rebuild; DIFFERS:
    -- at least one differs; NOT_VERIFIABLE: the archive cannot rebuild
    -- the day (reason says why).
    outcome       text        NOT NULL CHECK (outcome IN ('IDENTICAL', 'DIFFERS', 'NOT_VERIFIABLE')),
    flights       integer     NOT NULL DEFAULT 0,
    differing     integer     NOT NULL DEFAULT 0,
    messages      integer     NOT NULL DEFAULT 0,
    reason        text        NOT NULL DEFAULT '',
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    -- Who ran it: "api <user>" or "cli".
    ran_by        text        NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE day_verification;
