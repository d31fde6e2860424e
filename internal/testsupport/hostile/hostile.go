// Package hostile holds what the security tests throw at a feed's
// configuration: values an editor of a FlightFeed (or of a config file)
// could put in a setting that names something, and the list of those
// settings. internal/config checks them at validation, the reliability
// suite at the API server.
package hostile

import "strings"

// Values are values an editor of a feed's configuration could try in
// a setting that names something: SQL, shell and template injection, quotes
// of every SQL dialect, markup, control characters, a bidi override, full-width
// look-alikes, path traversal and an over-long value. Each holds a character
// that no such setting accepts, or is too long for every one of them.
var Values = []string{
	"CMINMSGS; DROP TABLE flight_schd",
	"CMINMSGS` WHERE 1=1 --",
	"x' OR '1'='1",
	`x" OR "1"="1`,
	"x\x00y",
	"x\ny",
	"x\r\nInjected: header",
	"x\x1b[31my",
	"x\u202egnp.exe",
	"ＣＭＩＮＭＳＧＳ",
	"../../etc/passwd",
	"$(id)",
	"${HOME}",
	"x y",
	"<x/>",
	"%s%n",
	"x\xffy",
	strings.Repeat("A", 300),
}

// NamingFields are every setting of a config file that names a table, a
// column, a topic or a host, or is a code written into SQL parameters, the
// RQFD's XML or the Kafka handshake, as a path in the file (and, under
// spec, in the FlightFeed resource). internal/config's
// TestEveryCRDStringIsConstrained keeps the resource's side complete.
var NamingFields = [][]string{
	{"airport", "iata"},
	{"airport", "timeZone"},
	{"mailbox", "inbound", "table"},
	{"mailbox", "inbound", "idColumn"},
	{"mailbox", "inbound", "dateReceivedColumn"},
	{"mailbox", "inbound", "dateProcessedColumn"},
	{"mailbox", "inbound", "statusColumn"},
	{"mailbox", "inbound", "bodyColumn"},
	{"mailbox", "inbound", "resultColumn"},
	{"mailbox", "inbound", "noteColumn"},
	{"mailbox", "inbound", "validStatus"},
	{"mailbox", "outbound", "table"},
	{"mailbox", "outbound", "idColumn"},
	{"mailbox", "outbound", "dateInsertedColumn"},
	{"mailbox", "outbound", "dateSentColumn"},
	{"mailbox", "outbound", "routingIdColumn"},
	{"mailbox", "outbound", "bodyColumn"},
	{"mailbox", "tls", "serverName"},
	{"database", "tls", "serverName"},
	{"kafka", "brokers"},
	{"kafka", "topics", "state"},
	{"kafka", "topics", "notice"},
	{"kafka", "clientId"},
	{"kafka", "transactionalIdPrefix"},
	{"kafka", "tls", "serverName"},
	{"requests", "routingId"},
	{"requests", "sender"},
	{"requests", "receiver"},
}
