package mailbox

import "time"

// SetIOTimeout shortens DefaultIOTimeout for a test and returns the undo.
func SetIOTimeout(d time.Duration) func() {
	old := ioTimeout
	ioTimeout = d
	return func() { ioTimeout = old }
}
