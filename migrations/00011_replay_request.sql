-- `flightfeed replay` asks the pump that holds the feed to apply a DEAD
-- message's archived raw text again (SPEC §2.8): the command records a
-- request here and waits; the pump applies PENDING requests between batches,
-- fenced like every write, and records the outcome in the same transaction.
-- A message is replayed at most once: a second request is refused unless
-- the first was REFUSED by the pump (the partial unique index).

-- +goose Up
CREATE TABLE replay_request (
    id               bigserial   PRIMARY KEY,
    message_id       bigint      NOT NULL,
    policy           text        NOT NULL CHECK (policy IN ('as-new', 'skip-conflicts')),
    requested_at     timestamptz NOT NULL DEFAULT now(),
    state            text        NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'DONE', 'REFUSED')),
    finished_at      timestamptz,
    -- The replay's own result (SUCCEEDED, SKIPPED, DEAD, FAILED), its reason
    -- code and note; for REFUSED, why the pump refused it.
    result           text,
    reason           text,
    note             text
);
CREATE UNIQUE INDEX replay_request_once ON replay_request (message_id) WHERE state <> 'REFUSED';
CREATE INDEX replay_request_pending ON replay_request (id) WHERE state = 'PENDING';

-- +goose Down
DROP TABLE replay_request;
