// Package mailbox is the adapter to the shared SIS mailbox in MySQL/MariaDB
// (SPEC §3.2): it reads the FIFO head of the inbound table, writes
// processing results back (one statement per batch) and inserts outbound
// requests. Every table and column name comes from configuration and is
// validated and quoted, never interpolated unchecked. It makes no decisions.
package mailbox
