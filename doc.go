// Package askbridge is the vocabulary of the bridge that lets software agents
// ask people structured questions in chat and wait for the answer.
//
// Data flows one way through it. An agent pushes a request onto the Redis
// requests stream; the engine decodes it with [DecodeRequest], resolves where
// it goes, and builds a [Plan] for the target channel's [Capabilities]. A
// [Channel] shows the plan to a person and reports taps and replies back; the
// engine ends the question in the [Store] (first writer wins), which pushes
// exactly one [Result] to the agent, and every message that showed the
// question is edited to a status line.
//
// The platform adapters (telegram, discord, slack), the Redis store (store)
// and the reply parser (textparse) live in their own packages; cmd/bridge is
// the only place that wires them together.
package askbridge
