-- Message processing state, the outbox, outbound requests and the backfill
-- intents (seed 000 §7, SPEC §2.2 and §2.4).

-- +goose Up
-- One row per mailbox row (message id = CMINMSGS_ID). A row that is already
-- terminal here is only backfilled again, never re-applied.
CREATE TABLE proc_state (
    message_id       bigint      PRIMARY KEY,
    -- Upstream identity SNDR|TYPE|STYP|SEQN and the payload digest: re-sent
    -- copies inside the window are SKIPPED, same key with another payload
    -- is flagged SEQN_REUSE.
    identity_key     text,
    payload_digest   bytea,
    msg_type         text,
    msg_styp         text,
    status           text        NOT NULL
                     CHECK (status IN ('PENDING', 'SUCCEEDED', 'SKIPPED', 'DEAD', 'FAILED')),
    reason           text,
    note             text,
    flags            text[]      NOT NULL DEFAULT '{}',
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    received_at      timestamptz NOT NULL,
    first_seen_at    timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    -- SUCCEEDED, SKIPPED and DEAD are terminal and carry their finish time.
    CONSTRAINT proc_state_terminal_finished
        CHECK (status IN ('PENDING', 'FAILED') OR finished_at IS NOT NULL)
);
CREATE INDEX proc_state_identity ON proc_state (identity_key, received_at DESC) WHERE identity_key IS NOT NULL;
CREATE INDEX proc_state_open ON proc_state (message_id) WHERE status IN ('PENDING', 'FAILED');

-- Outbox. KAFKA_SCHD rows carry the full state computed once inside the
-- write transaction (SPEC §2.1); KAFKA_MSG rows carry change notices;
-- deletes carry the tombstone. The dispatcher coalesces KAFKA_SCHD per FLID.
CREATE TABLE msg_event (
    id               bigserial   PRIMARY KEY,
    kind             text        NOT NULL CHECK (kind IN ('KAFKA_SCHD', 'KAFKA_MSG')),
    event            text        NOT NULL CHECK (event IN ('UPSERT', 'DELETE', 'NOTICE')),
    flid             bigint      NOT NULL CHECK (flid BETWEEN 0 AND 999999999999),
    state_version    bigint      NOT NULL CHECK (state_version > 0),
    operation_day    date,
    message_id       bigint      NOT NULL,
    -- The exact bytes to publish (canonical JSON: sorted keys), kept as
    -- text because jsonb would reorder keys and change spacing.
    payload          text        NOT NULL,
    status           text        NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'DELIVERED', 'SUPERSEDED')),
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    done_at          timestamptz,
    CHECK ((status = 'PENDING') = (done_at IS NULL))
);
-- Pending scan in commit order, and per-FLID coalescing.
CREATE INDEX msg_event_pending ON msg_event (id) WHERE status = 'PENDING';
CREATE INDEX msg_event_pending_flid ON msg_event (kind, flid, state_version) WHERE status = 'PENDING';
CREATE INDEX msg_event_done ON msg_event (done_at) WHERE status <> 'PENDING';

-- Outbound requests (RQFD) and their lifecycle; the request text itself is
-- written to the mailbox's COUTMSGS.
CREATE TABLE req_track (
    id               bigserial   PRIMARY KEY,
    kind             text        NOT NULL,
    operation_day    date        NOT NULL,
    range_start      text        NOT NULL,
    range_end        text        NOT NULL,
    routing_id       text        NOT NULL,
    seqn             integer     NOT NULL CHECK (seqn BETWEEN 1 AND 999999),
    status           text        NOT NULL
                     CHECK (status IN ('PENDING', 'COMPLETED', 'EXPIRED', 'TIMED_OUT')),
    outbox_id        bigint,
    requested_at     timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz,
    completed_at     timestamptz,
    completed_by     bigint,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- One live request per kind (seed 000 §7.1): a new one expires the old.
CREATE UNIQUE INDEX req_track_one_pending ON req_track (kind) WHERE status = 'PENDING';
CREATE INDEX req_track_day ON req_track (operation_day, kind, requested_at DESC);

-- Backfill intents, registered in the main transaction and deleted once the
-- mailbox row carries its result (SPEC §2.2).
CREATE TABLE backfill_todo (
    message_id       bigint      PRIMARY KEY,
    result           text        NOT NULL CHECK (result IN ('SUCCEEDED', 'SKIPPED', 'DEAD', 'FAILED')),
    note             text,
    processed_at     timestamptz NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE backfill_todo;
DROP TABLE req_track;
DROP TABLE msg_event;
DROP TABLE proc_state;
