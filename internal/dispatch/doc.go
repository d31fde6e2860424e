// Package dispatch publishes one feed's outbox (msg_event) to Kafka: each
// flight's full state on the state topic (KAFKA_SCHD), coalesced per FLID to
// its newest state_version, tombstones for deleted flights, and every change
// notice on the notice topic (KAFKA_MSG), through an idempotent producer
// (acks=all, key = the FLID in decimal, murmur2 partitioning like the Java
// client). The outbox is append-only: an event is done (the dispatcher's
// cursor moves past it) only after the broker acknowledged its record; everything else is retried with backoff (package backoff),
// forever (processing rules R7.3).
//
// Fencing: the producer is transactional (kafka.transactions, the default),
// its transactional.id the feed's, initialised when Run starts, so the next
// leader's producer fences it at the broker. Each pass is one transaction
// and the cursor moves only after the commit, by a statement that checks
// the leader's fencing epoch (Options.Epoch) in pipeline_lock. A fenced
// mark, or a fencing answer from the broker once the database confirms a
// newer epoch, stops the dispatcher for good (ErrFenced): a deposed leader
// never publishes or marks again. A broker that refused the producer while
// the epoch is still this dispatcher's (a transaction that outlived its
// timeout) gets a renewed client instead (Options.Renew). Consumers
// read with isolation.level=read_committed. With kafka.transactions false
// the producer is the plain idempotent one and only the cursor is fenced.
//
// Entry points, used by package feedrun: NewClient builds the *kgo.Client
// from the feed (New refuses a client built otherwise, because delivery
// relies on its manual flushing and fencing on its transactional id); New
// returns the Dispatcher; Run delivers until its context ends, and returns
// an error only when the dispatcher stopped for good (fenced, or a
// producer the broker refused for good), never because Kafka or the
// database failed for a while; Notify wakes it after a commit; Status and
// Idle report pending events for the status reporter and `pump --drain`
// (Idle says false without a statement while the dispatcher knows events
// are pending; only the database's count says true).
// Both constructors take the feed as package config defaulted it and set
// no defaults of their own.
//
// An outbox row is one message's effect on one flight and holds up to two
// records: its change notice (always, unless it is a re-delivered state)
// and its full state or tombstone (only on the newest version of its
// flight among the rows the pump wrote together). Records carry the
// payload exactly as committed and the headers state-version, event
// (UPSERT, DELETE or NOTICE) and operation-day (absent while the flight's
// day is NULL). A pass reads the oldest pending rows in id order (half of
// Options.BatchSize: each row up to two records), sends their notices and,
// per FLID, only its newest state above the cursor, at most BatchSize
// records (Run's passes grow during a backlog: twice as many after a pass
// whose window was full and wholly delivered, up to 10,000, and BatchSize
// again after any other), and waits for every acknowledgement before the
// next pass. A row
// is done when its notice is (delivered or parked) and its state is, or a
// newer state of its flight that covers it; the cursor then moves over
// every row of the window that is done, up to the first that is not.
// Records done above the cursor are kept in memory and not sent again,
// rows whose every record is done are left out of the next reads; a new
// leader sends them again (at-least-once). Parking names the record (row
// and kind), so a row's notice and its state are parked apart. Records of one FLID share a partition, and a failed record
// holds back later records of its FLID, so a FLID's versions on the state
// topic never decrease. Records already sent are never abandoned: a stalled
// pass keeps waiting and Status reports it as failing meanwhile.
//
// The package owns no decisions about flight state and never writes state
// tables: it reads pending rows, moves msg_event_cursor, lists parked
// records in msg_event_parked and counts failed attempts on msg_event rows.
// It must not be on the pump's path: the pump commits without waiting for
// Kafka.
package dispatch
