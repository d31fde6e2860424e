-- A pump that holds the fencing epoch now says it is alive: it renews
-- renewed_at every few seconds (store.Store.RenewEpoch). A pump another one
-- fenced reads it to tell a live holder (a second deployment on the same
-- database: it backs off and does not take the epoch back) from a dead one
-- (it takes the feed over once the holder has been silent long enough).
-- NULL for a holder that never renewed (an older release): it counts as
-- silent since acquired_at.

-- +goose Up
ALTER TABLE pipeline_lock ADD COLUMN renewed_at timestamptz;

-- +goose Down
ALTER TABLE pipeline_lock DROP COLUMN renewed_at;
