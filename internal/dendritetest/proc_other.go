//go:build !linux

package dendritetest

import "os/exec"

// setProcAttr has no process group or parent-death signal here; Close
// stops the server.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the Dendrite process.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
