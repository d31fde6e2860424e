-- OUT_OF_ORDER (seed 000 §5.6): a full-day snapshot whose META send time is
-- older than that of the day's last committed snapshot is flagged (never
-- refused: messages apply in mailbox order). The ledger keeps the send time
-- of the day's last committed snapshot; NULL for days committed before
-- this migration and for messages without a usable send time.

-- +goose Up
ALTER TABLE schd_gen ADD COLUMN last_sent_at timestamptz;

-- +goose Down
ALTER TABLE schd_gen DROP COLUMN last_sent_at;
