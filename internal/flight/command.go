package flight

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// Op is what a message does to one field (processing rules R5.4).
type Op uint8

// The four operations. The zero value is OpUnchanged.
const (
	// OpUnchanged leaves the field as it is (absent from an increment).
	OpUnchanged Op = iota
	// OpSet overwrites a scalar (Value) or an anomaly object (Anomaly).
	OpSet
	// OpClear removes the field (absent from a full snapshot, empty scalar or
	// anomaly, collection whose items all carry sequence "0").
	OpClear
	// OpReplace replaces a collection or record list as a whole (Items,
	// never empty: an empty replacement is expressed as OpClear).
	OpReplace
)

var opNames = [...]string{"UNCHANGED", "SET", "CLEAR", "REPLACE"}

// String returns the operation's name.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// MarshalText renders the name, so commands read well in JSON golden files.
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText parses a name written by MarshalText.
func (o *Op) UnmarshalText(b []byte) error {
	for i, n := range opNames {
		if n == string(b) {
			*o = Op(i)
			return nil
		}
	}
	return fmt.Errorf("unknown op %q", b)
}

// Command is the operation on one field.
type Command struct {
	Tag     string `json:"tag"`
	Op      Op     `json:"op"`
	Value   string `json:"value,omitempty"`   // scalar Set
	Items   []Item `json:"items,omitempty"`   // collection/record Replace
	Anomaly Item   `json:"anomaly,omitempty"` // anomaly Set
}

// Commands is everything one decoded record says about one flight.
type Commands struct {
	FLID FLID `json:"flid"`
	// Full marks a full snapshot (DNLD/RESP): a mapped field without a
	// command is cleared. Otherwise (FLOP, ADFT) it is unchanged.
	Full bool `json:"full"`
	// Cmds holds at most one command per tag, in canonical field order, only
	// for fields the record carried. Use For or Expanded for the others.
	Cmds []Command `json:"cmds"`
}

// For returns the command for tag, explicit or implied by Full.
func (c Commands) For(tag string) Command {
	for _, cmd := range c.Cmds {
		if cmd.Tag == tag {
			return cmd
		}
	}
	if c.Full {
		return Command{Tag: tag, Op: OpClear}
	}
	return Command{Tag: tag, Op: OpUnchanged}
}

// Expanded returns one command per mapped field, in canonical order, with
// the implied ones (Clear for a full snapshot, Unchanged otherwise) filled in.
func (c Commands) Expanded() []Command {
	out := make([]Command, 0, len(fieldTable))
	for _, cmd := range c.All() {
		out = append(out, cmd)
	}
	return out
}

// All yields Expanded's commands with each one's index in the field table,
// without building the slice (a full-day snapshot's merge walks them for
// each of its ten thousand flights). The commands must be validated
// (canonical order): an omitted field's command is implied, not looked up.
func (c Commands) All() iter.Seq2[int, Command] {
	return func(yield func(int, Command) bool) {
		implied := OpUnchanged
		if c.Full {
			implied = OpClear
		}
		next := 0
		for i := range fieldTable {
			cmd := Command{Tag: fieldTable[i].Tag, Op: implied}
			if next < len(c.Cmds) && c.Cmds[next].Tag == cmd.Tag {
				cmd = c.Cmds[next]
				next++
			}
			if !yield(i, cmd) {
				return
			}
		}
	}
}

// ErrInvalidCommand is wrapped by every Validate failure.
var ErrInvalidCommand = errors.New("invalid command")

// Validate checks the invariants the merge engine relies on: known tags,
// canonical order without duplicates, and an operation that fits the field's
// kind with its payload.
func (c Commands) Validate() error {
	if !c.FLID.Valid() {
		return fmt.Errorf("%w: FLID %d out of range", ErrInvalidCommand, uint64(c.FLID))
	}
	last := -1
	for _, cmd := range c.Cmds {
		pos := FieldOrder(cmd.Tag)
		if pos < 0 {
			return fmt.Errorf("%w: unmapped tag %q", ErrInvalidCommand, cmd.Tag)
		}
		if pos <= last {
			return fmt.Errorf("%w: %s out of canonical order or repeated", ErrInvalidCommand, cmd.Tag)
		}
		last = pos
		if err := cmd.validate(fieldTable[pos].Kind); err != nil {
			return err
		}
	}
	return nil
}

func (cmd Command) validate(kind Kind) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %s on %s field: %s", ErrInvalidCommand, cmd.Op, cmd.Tag, kind, why)
	}
	switch cmd.Op {
	case OpUnchanged, OpClear:
		if cmd.Value != "" || cmd.Items != nil || cmd.Anomaly != nil {
			return bad("carries a payload")
		}
	case OpSet:
		switch kind {
		case KindScalar:
			if cmd.Value == "" || cmd.Items != nil || cmd.Anomaly != nil {
				return bad("needs a non-empty Value only")
			}
		case KindAnomaly:
			if len(cmd.Anomaly) == 0 || cmd.Value != "" || cmd.Items != nil {
				return bad("needs a non-empty Anomaly only")
			}
		default:
			return bad("Set does not apply")
		}
	case OpReplace:
		if kind != KindCollection && kind != KindRecord {
			return bad("Replace does not apply")
		}
		if len(cmd.Items) == 0 || cmd.Value != "" || cmd.Anomaly != nil {
			return bad("needs a non-empty Items only")
		}
		if slices.ContainsFunc(cmd.Items, func(it Item) bool { return it == nil }) {
			return bad("nil item")
		}
		if slices.ContainsFunc(cmd.Items, func(it Item) bool { return len(it) == 0 }) {
			// An empty tag deletes the value (SIS §1.6.3): it is a Clear or
			// is dropped, never an item that would publish as {}.
			return bad("empty item")
		}
	default:
		return bad("unknown op")
	}
	return nil
}
