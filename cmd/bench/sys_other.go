//go:build !linux

package main

import (
	"os/exec"
	"time"
)

// setPdeathsig has no equivalent here; the bench stops its bridges itself.
func setPdeathsig(*exec.Cmd) {}

// selfCPU is not measured here.
func selfCPU() time.Duration { return 0 }
