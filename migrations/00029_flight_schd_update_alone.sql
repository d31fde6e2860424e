-- A live event (FLOP) rewrites its flight's main row: that should be one
-- heap-only (HOT) update record and nothing else. Two things added to it:
--
-- The guard flight_schd_guard was a BEFORE UPDATE row trigger. For such a
-- trigger PostgreSQL fetches and locks the old row before it updates it,
-- whether or not the WHEN clause then calls the function: one more WAL
-- record (LOCK) and page change per updated row. The guard only raises, it
-- never changes the new row, so it runs as an AFTER UPDATE row trigger with
-- the same WHEN clause, the same function and the same errors (FF001 with
-- hint SAME_FLID_ACROSS_OPERATION_DAYS, FF002, FF003): the failing
-- statement is refused as before, at its end instead of at the row. An
-- AFTER row trigger reads the old row without locking it.
--
-- The indexes on the typed SIS times (sodt_utc, cncl_utc, naat_utc,
-- neat_utc) were meant for the history sweep, which cannot use them: it
-- compares each time with the end of the flight's operation day computed
-- per row (greatest(day_end, naat_utc) < cutoff) and reads the whole table.
-- No other read filters on them. A FLOP that moves NEAT or NAAT (most
-- arrivals) changed an indexed column, so its update was not HOT and added
-- an entry to every index of flight_schd.
--
-- A changed collection of a flight that exists is now updated in place, row
-- by row at the ordinals it keeps (the store). Such an update is HOT only
-- when the row's page has room for the new version; a full-day snapshot's
-- COPY filled the child tables' pages, so the rows moved to another page
-- (an update, a lock of the old row and an index entry: no better than the
-- delete and insert it replaces). The child tables leave a tenth of each
-- page free, as flight_schd leaves a fifth (00005). It applies to pages
-- written from now on.

-- +goose Up
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard AFTER UPDATE ON flight_schd
    FOR EACH ROW
    WHEN ((OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day)
          OR NEW.flid <> OLD.flid
          OR NEW.state_version <= OLD.state_version)
    EXECUTE FUNCTION flight_schd_guard();
DROP INDEX flight_schd_sodt;
DROP INDEX flight_schd_cncl;
DROP INDEX flight_schd_naat;
DROP INDEX flight_schd_neat;
ALTER TABLE flight_gate SET (fillfactor = 90);
ALTER TABLE flight_checkin SET (fillfactor = 90);
ALTER TABLE flight_belt SET (fillfactor = 90);
ALTER TABLE flight_stand_plan SET (fillfactor = 90);
ALTER TABLE flight_chute SET (fillfactor = 90);
ALTER TABLE flight_delay SET (fillfactor = 90);
ALTER TABLE flight_bridge_op SET (fillfactor = 90);
ALTER TABLE flight_chock_op SET (fillfactor = 90);
ALTER TABLE flight_route_point SET (fillfactor = 90);

-- +goose Down
ALTER TABLE flight_gate RESET (fillfactor);
ALTER TABLE flight_checkin RESET (fillfactor);
ALTER TABLE flight_belt RESET (fillfactor);
ALTER TABLE flight_stand_plan RESET (fillfactor);
ALTER TABLE flight_chute RESET (fillfactor);
ALTER TABLE flight_delay RESET (fillfactor);
ALTER TABLE flight_bridge_op RESET (fillfactor);
ALTER TABLE flight_chock_op RESET (fillfactor);
ALTER TABLE flight_route_point RESET (fillfactor);
CREATE INDEX flight_schd_sodt ON flight_schd (sodt_utc);
CREATE INDEX flight_schd_cncl ON flight_schd (cncl_utc) WHERE cncl_utc IS NOT NULL;
CREATE INDEX flight_schd_naat ON flight_schd (naat_utc) WHERE naat_utc IS NOT NULL;
CREATE INDEX flight_schd_neat ON flight_schd (neat_utc) WHERE neat_utc IS NOT NULL;
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard BEFORE UPDATE ON flight_schd
    FOR EACH ROW
    WHEN ((OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day)
          OR NEW.flid <> OLD.flid
          OR NEW.state_version <= OLD.state_version)
    EXECUTE FUNCTION flight_schd_guard();
