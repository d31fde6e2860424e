package pumpdata

import "time"

// Reference-data operations (ReferenceChange.Op): what a reference-data
// message does to its type's list.
const (
	// RefReplace: the message is the whole list (DNLD, RESP): its records
	// are upserted, every other stored record of the type deleted.
	RefReplace = "REPLACE"
	// RefUpsert: insert or update each record by key (ADD, UPD).
	RefUpsert = "UPSERT"
	// RefDelete: delete each key (DEL); a key not stored is no error.
	RefDelete = "DELETE"
)

// ReferenceChange is one reference-data message's effect, written in the
// transaction of its batch, in mailbox order with the batch's other
// reference changes.
type ReferenceChange struct {
	MessageID int64
	// Type is the SIS TYPE of the list (AIRL, GLST, …).
	Type string
	Op   string
	// Keys are the records' keys; Docs their records as JSON objects, in
	// the same order (none for RefDelete).
	Keys []string
	Docs [][]byte
}

// ReferenceList is what is stored of one reference-data type: how many
// records, which message last changed the list and when, and the last
// whole list (DNLD, RESP) received (zero when none was).
type ReferenceList struct {
	Type          string    `json:"type"`
	Records       int64     `json:"records"`
	LastMessageID int64     `json:"last_message_id"`
	UpdatedAt     time.Time `json:"updated_at"`
	ReplacedBy    int64     `json:"replaced_by,omitempty"`
	ReplacedAt    time.Time `json:"replaced_at,omitzero"`
}

// ReferenceRecord is one stored reference-data record: its key, the
// record as the AODB sent it (a JSON object), the message that last
// changed it and when.
type ReferenceRecord struct {
	Type      string    `json:"type"`
	Key       string    `json:"key"`
	Doc       []byte    `json:"-"`
	MessageID int64     `json:"message_id"`
	UpdatedAt time.Time `json:"updated_at"`
}
