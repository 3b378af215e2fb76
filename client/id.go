package client

import (
	"crypto/rand"
	"encoding/hex"
)

// IDPrefix opens every id NewID makes, so a person or an operator reading
// Redis can tell a generated id from one an agent chose.
const IDPrefix = "ask-"

// NewID returns a fresh question id: IDPrefix and 128 random bits in hex
// (ask-3f9c…, 36 characters), a valid protocol id no other request will
// use. Push gives one to a request without an id; an agent that retries a
// push on its own should make the id once, with NewID, and push the same
// request each time.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return IDPrefix + hex.EncodeToString(b[:])
}
