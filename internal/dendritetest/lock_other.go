//go:build !unix

package dendritetest

// lockFile cannot lock here: the tests run Dendrite on Unix only.
func lockFile(string) (func(), error) { return nil, errNoLock }
