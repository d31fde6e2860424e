// Package scrapertoken keeps the metrics scraper's bearer tokens
// short-lived. Prometheus scrapes the operator's and the pump pods'
// /metrics with a token it reads from a Secret (the ServiceMonitor's
// authorization). That Secret used to be a
// kubernetes.io/service-account-token Secret: a legacy token that never
// expires, valid wherever it leaks. A Keeper instead fills an ordinary
// Secret with a TokenRequest token of the scraper's ServiceAccount,
// expiring after its TTL, and writes a fresh one before a third of the TTL
// is left; Prometheus Operator rewrites the scrape configuration when the
// Secret changes. The operator's Keeper carries the API server's audience
// alone (the operator's /metrics). Each feed's pump pods are scraped with
// a token made for that feed's audience only, which the operator keeps in
// the feed's namespace (controllers.ScrapeTokens, which reads the tokens'
// lifetimes and audiences with TokenTimes and TokenAudiences), so a token
// that reaches one endpoint is good at no other; Keeper.Audiences, which
// adds audiences to one shared token, is no longer used by the operator.
// The decision of when to renew is the pure function Due; the rest is a
// thin adapter over client-go.
package scrapertoken
