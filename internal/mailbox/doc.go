// Package mailbox is the adapter to the shared SIS mailbox in MySQL/MariaDB
// (processing rules R2.2): it reads the FIFO head of the inbound table (bodies bounded
// by a byte budget) and its depth, writes processing results back (one
// statement per batch) and inserts outbound requests. Put and TakeOutbound
// play the AODB's side for `flightfeed simulate`, the demo and tests; in
// production FlightFeed never writes inbound rows or marks requests sent.
// Every table and column name the adapter uses comes from configuration
// and is validated and quoted, never interpolated unchecked. It makes no
// decisions: what a row's result is belongs to the pump.
//
// schema.go is the one home of the default layout: its DDL (schema.sql,
// applied by `flightfeed simulate --create-mailbox` and the tests) and
// WriteInbound, the one writer of inbound rows in that layout.
package mailbox
