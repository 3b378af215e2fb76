// Package lazyre compiles a package's regular expressions on first use
// instead of at package init. A bounded repetition such as {1,256} compiles
// into that many copies of its class; a dozen of them at init were a
// noticeable part of the bridge's start before it polls, and most are only
// needed once a setting or a request is checked.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern on its first call, panicking
// as regexp.MustCompile does if it does not compile, and returns the same
// *regexp.Regexp on every call. Safe for concurrent use.
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
