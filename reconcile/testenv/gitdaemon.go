// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// GitDaemon serves the repositories under base over git:// on the
// loopback port until the test ends, and returns once it answers.
//
// `git daemon` runs git-daemon as its child rather than becoming it, so
// killing the process it starts would leave git-daemon serving after the
// test. The daemon runs in a process group of its own, and the test's end
// kills the group.
func GitDaemon(t testing.TB, gitBin, base string, port int) {
	t.Helper()
	daemon := exec.Command(gitBin, "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--base-path="+base, "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL)
		daemon.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the git daemon did not come up on port %d: %v", port, err)
		}
	}
}
