package sis

import "strconv"

// elemPath locates an element for error messages without building a string
// until an error needs it: parent + "/" + tag + "[index]" (no index when 0).
type elemPath struct {
	parent string
	tag    string
	index  int
}

func (p elemPath) String() string {
	s := p.parent
	if p.tag != "" {
		if s != "" {
			s += "/"
		}
		s += p.tag
	}
	if p.index > 0 {
		s += "[" + strconv.Itoa(p.index) + "]"
	}
	return s
}

// attr returns the path of an attribute or child of the element.
func (p elemPath) attr(name string) string { return p.String() + "@" + name }
func (p elemPath) child(name string) string {
	return p.String() + "/" + name
}
