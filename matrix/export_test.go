package matrix

// Crash makes the channel stop as a killed process would: its syncer
// keeps the lease until it expires.
func (c *Channel) Crash() { c.crash.Store(true) }
