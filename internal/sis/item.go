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
func flatten(n *node, path string) (flight.Item, error) {
	item := make(flight.Item, len(n.attrs)+len(n.children)+1)
	if err := flattenInto(item, n, "", path); err != nil {
		return nil, err
	}
	return item, nil
}

func flattenInto(item flight.Item, n *node, prefix, path string) error {
	for _, a := range n.attrs {
		key := prefix + "@" + qualified(a.Name)
		if prefix == "" {
			key = qualified(a.Name)
		}
		if err := put(item, key, a.Value, path); err != nil {
			return err
		}
	}
	for _, c := range n.children {
		key := c.name
		if prefix != "" {
			key = prefix + "/" + c.name
		}
		if len(c.children) == 0 {
			if err := put(item, key, c.text, path); err != nil {
				return err
			}
			if err := flattenAttrsOnly(item, c, key, path); err != nil {
				return err
			}
			continue
		}
		if err := flattenInto(item, c, key, path); err != nil {
			return err
		}
	}
	text := n.text
	if len(n.children) > 0 {
		text = strings.TrimSpace(text)
	}
	if isBlank(text) {
		return nil
	}
	key := flight.TextKey
	if prefix != "" {
		key = prefix
	}
	return put(item, key, text, path)
}

func flattenAttrsOnly(item flight.Item, n *node, key, path string) error {
	for _, a := range n.attrs {
		if err := put(item, key+"@"+qualified(a.Name), a.Value, path); err != nil {
			return err
		}
	}
	return nil
}

func put(item flight.Item, key, value, path string) error {
	if _, dup := item[key]; dup {
		return newError(ReasonDuplicateField, path+"/"+key, "item key %s occurs twice", key)
	}
	item[key] = value
	return nil
}
