// Package askbridge is the public protocol of the bridge that lets software
// agents ask people structured questions in chat and wait for the answer
// (docs/redis-protocol.md, docs/ask-user.md): what an agent writes and reads,
// and nothing of the bridge itself.
//
// It holds the request and its validation ([DecodeRequest], with every
// problem naming its field), the result ([Result], [Status], [Reason]), the
// Redis keys ([Keys], [CheckPrefix]) and event names ([EventKind]), the
// button payload codec ([EncodePayload], [DecodePayload]) and the check a
// receiver makes of a signed result callback ([CallbackSignature]). It
// imports the standard library, plus the grapheme counting and language tag
// parsing validation needs; a program that only asks questions
// (package client) pulls in nothing else but go-redis.
//
// The bridge that serves the protocol lives elsewhere: the engine (package
// engine), the Redis store (store), the platform channels (telegram,
// discord, slack, web) and cmd/bridge, the only place that wires them.
package askbridge
