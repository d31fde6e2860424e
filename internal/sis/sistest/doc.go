// Package sistest builds realistic SIS messages in memory for tests, fuzz
// seeds and benchmarks of the sis codec. It is test support only: no
// production code imports it.
package sistest
