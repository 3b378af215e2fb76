package askbridge

// Target is where a question is shown: a platform and a chat on it. For the
// web page Platform is "web" and Chat is empty.
type Target struct {
	Platform string `json:"platform"`
	Chat     string `json:"chat,omitempty"`
}

// String renders the target in the `to` syntax of the protocol.
func (t Target) String() string {
	if t.Chat == "" {
		return t.Platform
	}
	return t.Platform + ":" + t.Chat
}
