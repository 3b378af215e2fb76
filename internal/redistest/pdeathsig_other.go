//go:build !linux

package redistest

import "os/exec"

// setPdeathsig has no equivalent here; Close stops the servers.
func setPdeathsig(*exec.Cmd) {}
