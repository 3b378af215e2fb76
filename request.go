package askbridge

// Option is one choice of a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one question of a request.
type Question struct {
	ID          string   `json:"id"`
	Header      string   `json:"header"`
	Question    string   `json:"question"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
}

// Request is a normalised ask request: ask-user.md §1 plus the protocol
// fields of redis-protocol.md.
type Request struct {
	ID             string         `json:"id,omitempty"`
	To             string         `json:"to,omitempty"`
	Answerers      []string       `json:"answerers,omitempty"`
	Agent          string         `json:"agent,omitempty"`
	Questions      []Question `json:"questions"`
	TimeoutSeconds int            `json:"timeoutSeconds"`
}
