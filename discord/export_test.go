package discord

// Escape is escape, for the external tests.
var Escape = escape
