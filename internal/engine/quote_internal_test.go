package engine

import (
	"encoding/json"
	"testing"
)

// The notice's strings are quoted exactly as encoding/json quotes them,
// on the fast path (printable ASCII) as on the others.
func TestAppendJSONQuotedIsJSONMarshal(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "FLOP", "ESTT", "a b-c_d.e/f", "A\"B", `A\B`, "<SCHD>", "a&b", "x>y", "tab\there", "nl\n",
		"\x00", "\x1f", "\x7f", "é", "\xff\xfe", "\u2028", "\u2029", "日本", "~!@#$%^*()[]{}|;:',.?"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONQuoted([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Errorf("%q: %s, want %s", s, got[len("prefix"):], want)
		}
	}
}
