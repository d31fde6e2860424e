// Package readapi is the HTTP surface of a pump pod: the feed's read API
// (the flights and their history, the reference lists, and the DEAD
// messages, parked events and replay requests that `flightfeed
// dead|parked|replay --feed` ask for through the API server's service
// proxy), its wire types, which package cli decodes (HistoryPage,
// RefRecord, TokenHeader, MaxListLimit, …), and the secure /metrics
// endpoint. Every request is authorized for a token of the feed's audience
// (Access: TokenReview, SubjectAccessReview) and the HTTPS servers bound
// slow clients (Timeouts). The pump pod (package pumppod) runs APIServer
// and MetricsServer and hands the read API its directory of feeds
// (FeedLookup). It reads through the store, whose own errors it answers
// with (never the driver's: depguard rule "read-api"), and imports neither
// pumppod, which runs it, nor feedrun or the pump; controllers and the
// adapters never import it.
package readapi
