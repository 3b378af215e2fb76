//go:build !unix

package dendritetest

import "errors"

// errNoLock is returned where files cannot be locked.
var errNoLock = errors.New("dendritetest: file locks are not supported here; run the Matrix tests on Linux or another Unix")

// lockFile cannot lock here: the tests run Dendrite on Unix only.
func lockFile(string) (func(), error) { return nil, errNoLock }
