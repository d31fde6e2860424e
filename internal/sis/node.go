package sis

import "encoding/xml"

// node is one element read into memory. Children form a linked list so a
// tree needs no slice allocations; nodes live in an arena.
type node struct {
	name        string
	attrs       []xml.Attr
	text        string
	more        []byte // text being accumulated from several pieces; see addText
	first, last *node
	next        *node
	nchildren   int
	// start and end are the element's range in the input, from its start
	// tag's '<' to the end of its end tag.
	start, end int
}

func (n *node) append(c *node) {
	if n.last == nil {
		n.first = c
	} else {
		n.last.next = c
	}
	n.last = c
	n.nchildren++
}

func (n *node) hasChildren() bool { return n.first != nil }

// addText accumulates character data and reports whether the text grew.
// White space that only indents child elements is not concatenated: while
// the text so far is blank, more blank text is dropped (it cannot change a
// scalar, an item value or a trimmed TEXT), which keeps pretty-printed
// records allocation-free. Text that arrives in several pieces (split by
// comments, CDATA sections) is appended to a buffer, not to the string: a
// value cut into a million pieces must cost linear, not quadratic, time.
func (n *node) addText(t string) bool {
	switch {
	case n.more != nil:
		n.more = append(n.more, t...)
	case n.text == "":
		n.text = t
	case isBlank(n.text) && isBlank(t):
		return false
	default:
		n.more = make([]byte, 0, 2*(len(n.text)+len(t)))
		n.more = append(append(n.more, n.text...), t...)
	}
	return true
}

// textLongerThan reports whether the text is longer than limit bytes and
// not blank. Blank text is indentation or an empty value, and costs nothing:
// it is a substring of the input, not a copy.
func (n *node) textLongerThan(limit int) bool {
	if n.more != nil {
		return len(n.more) > limit // holds non-blank text: see addText
	}
	return len(n.text) > limit && !isBlank(n.text)
}

// endText makes the accumulated text the node's text.
func (n *node) endText() {
	if n.more != nil {
		n.text, n.more = string(n.more), nil
	}
}

// arena hands out nodes from reusable blocks; pointers stay valid until
// reset. The first block is small, since most messages (a FLOP, an FDEL)
// have a few dozen elements; later blocks are large.
type arena struct {
	blocks [][]node
	block  int
	used   int
	// touched counts the blocks handed out from since the arena was
	// made or taken from the pool: the ones its release must clear.
	touched int
}

const (
	arenaFirstBlock = 32
	arenaBlock      = 256
)

func (a *arena) alloc() *node {
	if a.block == len(a.blocks) {
		size := arenaBlock
		if a.block == 0 {
			size = arenaFirstBlock
		}
		a.blocks = append(a.blocks, make([]node, size))
	}
	if a.block >= a.touched {
		a.touched = a.block + 1
	}
	n := &a.blocks[a.block][a.used]
	*n = node{}
	a.used++
	if a.used == len(a.blocks[a.block]) {
		a.block, a.used = a.block+1, 0
	}
	return n
}

func (a *arena) reset() { a.block, a.used = 0, 0 }
