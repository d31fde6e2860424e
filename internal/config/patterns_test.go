package config

import (
	"strings"
	"testing"
)

// The code patterns keep their limits with the lengths checked apart from
// the expressions: the longest value each allows passes, one byte more, an
// empty value and a character outside the class are refused.
func TestBoundedPatterns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        boundedPattern
		ok       byte // a character of the class
		max      int
		emptyOK  bool
		badChars string
	}{
		{"identifier", identifierPattern, 'a', 64, false, " -.;`"},
		{"topic", topicPattern, 't', 249, false, " /:@"},
		{"transactional id prefix", txnPrefixPattern, 'x', 100, false, " /:"},
		{"time zone", timeZonePattern, 'Z', 64, false, " .:"},
		{"client id", clientIDPattern, 'c', 128, false, " /:"},
		{"server name", serverNamePattern, 'h', 253, false, " /_@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			longest := strings.Repeat(string(tc.ok), tc.max)
			if !tc.p.MatchString(longest) {
				t.Errorf("%d bytes refused", tc.max)
			}
			if tc.p.MatchString(longest + string(tc.ok)) {
				t.Errorf("%d bytes accepted", tc.max+1)
			}
			if tc.p.MatchString("") != tc.emptyOK {
				t.Errorf("empty value accepted: %v", !tc.emptyOK)
			}
			for _, c := range tc.badChars {
				if v := string(tc.ok) + string(c); tc.p.MatchString(v) {
					t.Errorf("%q accepted", v)
				}
			}
		})
	}
	if identifierPattern.MatchString("1table") || !identifierPattern.MatchString("_t$1") {
		t.Error("an identifier starts with a letter or underscore and may hold $")
	}
}
