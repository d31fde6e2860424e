-- `flightfeed dead` lists DEAD and FAILED messages newest first; proc_state
-- holds a row per message ever processed, so the listing reads an index of
-- those few rather than the table.

-- +goose Up
CREATE INDEX proc_state_dead ON proc_state (received_at DESC, message_id DESC) WHERE status IN ('DEAD', 'FAILED');

-- +goose Down
DROP INDEX proc_state_dead;
