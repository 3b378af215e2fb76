package dendritetest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts Dendrite in a process group of its own, and has the
// kernel kill it when the test binary dies, so a crashed or killed test
// run leaves no homeserver behind.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills Dendrite's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
