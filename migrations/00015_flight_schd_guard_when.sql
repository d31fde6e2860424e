-- flight_schd_guard ran its PL/pgSQL function for every updated main row,
-- although it only ever acts when a rule is broken. A WHEN clause with the
-- same three rules is evaluated by the executor, so a write that keeps them
-- (every write of the store) no longer enters PL/pgSQL. The rules, their
-- errors (FF001 with hint SAME_FLID_ACROSS_OPERATION_DAYS, FF002, FF003)
-- and the writers they bind (anyone, not only the store) are unchanged.

-- +goose Up
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard BEFORE UPDATE ON flight_schd
    FOR EACH ROW
    WHEN ((OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day)
          OR NEW.flid <> OLD.flid
          OR NEW.state_version <= OLD.state_version)
    EXECUTE FUNCTION flight_schd_guard();

-- +goose Down
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard BEFORE UPDATE ON flight_schd
    FOR EACH ROW EXECUTE FUNCTION flight_schd_guard();
