package store

import "github.com/jackc/pgx/v5/pgxpool"

// PoolStat is a snapshot of the connection pool's statistics, for its
// metrics.
func (s *Store) PoolStat() *pgxpool.Stat { return s.pool.Stat() }
