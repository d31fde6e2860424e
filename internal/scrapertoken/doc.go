// Package scrapertoken keeps the metrics scraper's bearer token short-lived.
// Prometheus scrapes the operator's and the pump pods' /metrics with a
// token it reads from a Secret (the ServiceMonitor's authorization). That
// Secret used to be a kubernetes.io/service-account-token Secret: a legacy
// token that never expires, valid wherever it leaks. A Keeper instead
// fills an ordinary Secret with a TokenRequest token of the scraper's
// ServiceAccount, expiring after its TTL, and writes a fresh one before a
// third of the TTL is left; Prometheus Operator rewrites the scrape
// configuration when the Secret changes. The token carries the API
// server's audience (the operator's /metrics) and, with Keeper.Audiences,
// every feed's: a pump pod's /metrics takes only a token made for its
// feed (issue 46). The decision of when to renew is
// the pure function Due; the rest is a thin adapter over client-go.
package scrapertoken
