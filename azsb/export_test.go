package azsb

import "time"

// Test hooks: unexported helpers the external tests reach.
var (
	FormatDuration = formatDuration
	ParseDuration  = parseDuration
)

// SetAcceptTimeout sets how long c's AcceptNextSession* waits when its ctx
// has no deadline (the service's minute, by default).
func SetAcceptTimeout(c *Client, d time.Duration) { c.acceptTimeout = d }
