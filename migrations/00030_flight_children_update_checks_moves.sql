-- A collection row still needs its flight's main row (00006), but an
-- update is checked only when it moves a row to another flight. A FLOP
-- that changes a collection of a flight that exists updates that
-- flight's rows in place (00029): the statement-level check kept every
-- updated row in a transition table and looked each one's main row up
-- again, though the update never changes flid: about a seventh of the
-- backend CPU of such a write. A row that keeps its flid keeps a main
-- row: the insert check gave it one, flight_schd's flid never changes
-- (flight_schd_guard) and a main row with collection rows cannot be
-- deleted (flight_schd_children_first) or truncated.
--
-- The check is now an AFTER UPDATE row trigger whose WHEN clause is false
-- for an update that keeps flid: no event is queued for it, and an
-- AFTER row trigger reads the old row without locking it (as
-- flight_schd_guard since 00029), so the update stays one HOT record.
-- A move to a flight without a main row is refused as before, at the
-- statement's end, with the same error code (23503) and message.
--
-- Only the catalog changes (no table is read or rewritten): each table's
-- lock is held for an instant, whatever its size.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION flight_child_moved_has_main_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM flight_schd p WHERE p.flid = NEW.flid) THEN
        RAISE EXCEPTION '%: flight % has no row in flight_schd', TG_TABLE_NAME, NEW.flid
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    child text;
BEGIN
    FOREACH child IN ARRAY ARRAY['flight_gate', 'flight_checkin', 'flight_belt', 'flight_stand_plan',
        'flight_chute', 'flight_delay', 'flight_bridge_op', 'flight_chock_op', 'flight_route_point'] LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', child || '_main_row_upd', child);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I FOR EACH ROW
            WHEN (NEW.flid <> OLD.flid) EXECUTE FUNCTION flight_child_moved_has_main_row()', child || '_main_row_upd', child);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    child text;
BEGIN
    FOREACH child IN ARRAY ARRAY['flight_gate', 'flight_checkin', 'flight_belt', 'flight_stand_plan',
        'flight_chute', 'flight_delay', 'flight_bridge_op', 'flight_chock_op', 'flight_route_point'] LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', child || '_main_row_upd', child);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS written
            FOR EACH STATEMENT EXECUTE FUNCTION flight_child_has_main_row()', child || '_main_row_upd', child);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION flight_child_moved_has_main_row();
