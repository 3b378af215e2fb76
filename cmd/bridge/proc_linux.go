package main

import (
	"os/exec"
	"syscall"
)

// stopWithBridge has the kernel kill the embedded redis-server when the
// bridge dies, so a killed bridge leaves none behind holding the port, and
// puts it in a process group of its own, so a Ctrl-C in the terminal stops
// the bridge first (gracefully, still talking to Redis) and the bridge then
// stops the server.
func stopWithBridge(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
