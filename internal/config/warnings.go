package config

import "github.com/flightfeed/flightfeed/api/v1alpha1"

// Warning is a warning condition a feed's configuration raises: allowed,
// because the feed opted in, but never silent.
type Warning struct {
	// Condition is the FlightFeed condition that shows it True.
	Condition v1alpha1.ConditionType
	// Message is that condition's message; it quotes no credential.
	Message string
}

// WarningsOf are the warnings of a resolved feed, in the order the status
// lists their conditions: plain text (PlaintextDependency), TLS without
// verification (UnverifiedTLSDependency), a require_auth that answers
// cleartext or MD5 password requests (WeakDatabaseAuth). The operator
// shows them as conditions; `flightfeed pump --config` logs them.
func WarningsOf(f *Feed) []Warning {
	var out []Warning
	for _, w := range []Warning{
		{v1alpha1.ConditionPlaintextDependency, PlaintextWarning(PlaintextOf(&f.Spec, f.Secrets))},
		{v1alpha1.ConditionUnverifiedTLSDependency, UnverifiedWarning(UnverifiedOf(&f.Spec, f.Secrets))},
		{v1alpha1.ConditionWeakDatabaseAuth, WeakAuthWarning(WeakAuthOf(f.Secrets))},
	} {
		if w.Message != "" {
			out = append(out, w)
		}
	}
	return out
}
