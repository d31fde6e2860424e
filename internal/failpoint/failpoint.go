package failpoint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Env is the environment variable a tagged binary reads its arming from.
const Env = "FLIGHTFEED_FAILPOINTS"

// The fail points (see the package documentation for where each is).
const (
	AfterDecode      = "after-decode"
	BeforeCommit     = "before-commit"
	AfterCommit      = "after-commit"
	AfterWriteBack   = "after-write-back"
	AfterKafkaCommit = "after-kafka-commit"
	StatusWrite      = "status-write"
)

// Names lists every fail point, in the order a message meets them.
func Names() []string {
	return []string{AfterDecode, BeforeCommit, AfterCommit, AfterWriteBack, AfterKafkaCommit, StatusWrite}
}

// Arming maps an armed point to the hit (1-based) at which it crashes.
type Arming map[string]int

// String is the arming in Env's syntax, points in Names order.
func (a Arming) String() string {
	var parts []string
	for _, name := range Names() {
		if n, ok := a[name]; ok {
			parts = append(parts, fmt.Sprintf("%s@%d", name, n))
		}
	}
	return strings.Join(parts, ",")
}

// Parse reads Env's syntax: comma-separated name@n entries (n ≥ 1; a bare
// name is @1), blanks around entries ignored, an empty spec arming
// nothing. Unknown names, a count that is not a positive integer and a
// point named twice are errors.
func Parse(spec string) (Arming, error) {
	out := Arming{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, count, hasCount := strings.Cut(entry, "@")
		name = strings.TrimSpace(name)
		if !slices.Contains(Names(), name) {
			return nil, fmt.Errorf("%s: unknown fail point %q (known: %s)", Env, name, strings.Join(Names(), ", "))
		}
		n := 1
		if hasCount {
			var err error
			n, err = strconv.Atoi(strings.TrimSpace(count))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: %q: the hit count must be a positive integer", Env, entry)
			}
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: fail point %q armed twice", Env, name)
		}
		out[name] = n
	}
	return out, nil
}
