package engine

import "time"

// Meta identifies the message whose effects are decided: its notices carry
// it, and its states record it as their last message.
type Meta struct {
	// MessageID is the mailbox row id (CMINMSGS_ID).
	MessageID int64
	// ReceivedAt is the mailbox row's received time (with MessageID, the
	// message's identity: ids can restart).
	ReceivedAt time.Time
	Type       string
	Styp       string
	// Door, when set, measures the Kafka records an effect would publish
	// against the largest the topics accept (kafka.maxRecordBytes): a
	// message whose new flight state or notice would make a larger record
	// is refused with a *TooLarge error and changes nothing.
	Door Door
}
