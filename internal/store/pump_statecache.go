package store

import "github.com/flightfeed/flightfeed/internal/pumpdata"

// StateCache keeps the flight states a writer committed (pumpdata's: the
// pump holds it across batches and hands it to Prefetch and LoadSet).
type StateCache = pumpdata.StateCache

// DefaultStateCacheFlights bounds a StateCache.
const DefaultStateCacheFlights = pumpdata.DefaultStateCacheFlights

// NewStateCache holds up to limit flights (DefaultStateCacheFlights when
// limit ≤ 0).
func NewStateCache(limit int) *StateCache { return pumpdata.NewStateCache(limit) }
