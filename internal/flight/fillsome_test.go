package flight

import "math/rand/v2"

// fillSome sets about a third of the fields of s, drawn by r in the field
// table's order: a scalar to value(), an anomaly to anomaly(), a list to
// list(). Nothing is set in a state built without maps (nil Scalars), and
// no list when Lists is nil: what the property tests draw their random
// states with, each with its own values and items.
func fillSome(r *rand.Rand, s *State, value func() string, anomaly func() Item, list func() []Item) {
	if s.Scalars == nil {
		return
	}
	for _, f := range Fields() {
		if r.IntN(3) > 0 {
			continue
		}
		switch f.Kind {
		case KindScalar:
			s.Scalars[f.Tag] = value()
		case KindAnomaly:
			s.Anomalies[f.Tag] = anomaly()
		default:
			if s.Lists != nil {
				s.Lists[f.Tag] = list()
			}
		}
	}
}

// listsOf draws lists of up to two items of item.
func listsOf(r *rand.Rand, item func() Item) func() []Item {
	return func() []Item {
		var out []Item
		for range r.IntN(3) {
			out = append(out, item())
		}
		return out
	}
}
