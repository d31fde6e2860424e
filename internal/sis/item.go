package sis

import (
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// flatten turns an element into an Item that keeps everything: attributes
// under their names, leaf children under their tags (text verbatim, "" when
// empty), a child's attributes as "CHILD@ATTR", deeper elements as
// "CHILD/GRANDCHILD", and the element's own text under TEXT — verbatim when
// it has no child elements, trimmed when text and elements are mixed (its
// surrounding white space is then indentation). A key that would occur twice
// is a DUPLICATE_FIELD error, never a silent overwrite.
func flatten(n *node, at elemPath) (flight.Item, error) {
	item := make(flight.Item, len(n.attrs)+n.nchildren+1)
	if err := flattenInto(item, n, "", at); err != nil {
		return nil, err
	}
	return item, nil
}

func flattenInto(item flight.Item, n *node, prefix string, at elemPath) error {
	for _, a := range n.attrs {
		key := qualified(a.Name)
		if prefix != "" {
			key = prefix + "@" + key
		}
		if err := put(item, key, a.Value, at); err != nil {
			return err
		}
	}
	for c := n.first; c != nil; c = c.next {
		key := c.name
		if prefix != "" {
			key = prefix + "/" + c.name
		}
		if !c.hasChildren() {
			if err := put(item, key, c.text, at); err != nil {
				return err
			}
			for _, a := range c.attrs {
				if err := put(item, key+"@"+qualified(a.Name), a.Value, at); err != nil {
					return err
				}
			}
			continue
		}
		if err := flattenInto(item, c, key, at); err != nil {
			return err
		}
	}
	text := n.text
	if n.hasChildren() {
		text = strings.TrimSpace(text)
	}
	if isBlank(text) {
		return nil
	}
	key := flight.TextKey
	if prefix != "" {
		key = prefix
	}
	return put(item, key, text, at)
}

func put(item flight.Item, key, value string, at elemPath) error {
	if _, dup := item[key]; dup {
		return newError(ReasonDuplicateField, at.child(key), "item key %s occurs twice", key)
	}
	item[key] = value
	return nil
}
