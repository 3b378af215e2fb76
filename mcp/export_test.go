package mcp

// Summary is summary, for its table test.
var Summary = summary

// SpeakOnly narrows the protocol versions the server offers: a test speaks
// an older protocol (one that cancels with a notification) with it.
func SpeakOnly(o *Options, versions ...string) { o.versions = versions }

// ToolCalls is toolCalls, for its fuzz test.
var ToolCalls = toolCalls

// ToolForTest is the tool as listed, for the test that the docs name
// every field of it.
var ToolForTest = tool
