// Package enginetest holds what tests of the engine and its channels share.
package enginetest

import "github.com/askbridge/askbridge/engine"

// Store is the whole of the store an engine takes (EngineConfig.Store):
// every family of it. Tests that wrap a store to inject faults embed it.
// No part of the engine sees it whole.
type Store interface {
	engine.Coordinator
	engine.Requests
	engine.Questions
	engine.Ends
	engine.Timers
	engine.Places
	engine.Publisher
}
