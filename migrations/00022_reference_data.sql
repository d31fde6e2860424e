-- Reference data (issue 52): the interface's lists of airlines, airports,
-- gates, stands, … (SIS §3.1–3.15), applied in the batch transaction of
-- the message that carries them. One table for every type: a record is
-- its type, its key (the type's code element) and the record as the AODB
-- sent it (every element and attribute, as JSON); message_id is the
-- message that last changed it (a record a message repeats unchanged keeps
-- the older one). ref_list says per type which message last changed the
-- list and which last replaced it whole (DNLD, or RESP to an RQRD).

-- +goose Up
CREATE TABLE ref_record (
    kind       text        NOT NULL,
    key        text        NOT NULL,
    doc        jsonb       NOT NULL,
    message_id bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE TABLE ref_list (
    kind            text PRIMARY KEY,
    last_message_id bigint      NOT NULL,
    updated_at      timestamptz NOT NULL,
    replaced_by     bigint,
    replaced_at     timestamptz
);

-- +goose Down
DROP TABLE ref_list;
DROP TABLE ref_record;
