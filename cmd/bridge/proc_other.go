//go:build !linux

package main

import "os/exec"

// stopWithBridge has no equivalent here: the bridge stops the embedded
// redis-server when it stops.
func stopWithBridge(*exec.Cmd) {}
