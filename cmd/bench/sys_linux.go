package main

import (
	"os/exec"
	"syscall"
	"time"
)

// setPdeathsig has the kernel kill a bridge when the bench dies, so an
// interrupted run leaves no process behind.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// selfCPU is the CPU time the bench itself used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
