//go:build !reliability

package failpoint

// Enabled reports whether the binary was built with the `reliability`
// tag, which compiles the fail points in.
const Enabled = false

// Hit does nothing: without the `reliability` build tag the fail points
// are compiled away.
func Hit(string) {}
