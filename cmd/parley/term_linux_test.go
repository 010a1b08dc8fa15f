package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ainotes/parley/infra/testenv"
)

// TestLoginReadsTheTokenWithoutEcho: on a terminal (a pseudo-terminal
// here) login asks for the token, the terminal does not echo it, and the
// terminal is as it was afterwards.
func TestLoginReadsTheTokenWithoutEcho(t *testing.T) {
	e := newClientEnv(t)
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer master.Close()
	var pts int
	rc, err := master.SyscallConn() // not Fd(): the master stays non-blocking, for deadlines
	if err != nil {
		t.Fatal(err)
	}
	if cerr := rc.Control(func(fd uintptr) {
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			pts, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}); cerr != nil || err != nil {
		t.Skipf("no pseudo-terminal: %v %v", cerr, err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", pts), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()

	var stdout, stderr testenv.SyncBuffer
	c := e.cli("", "", &stdout, &stderr)
	c.stdin = tty
	done := make(chan int, 1)
	go func() { done <- c.run(context.Background(), []string{"login", e.base}) }()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "Token for "+e.base); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt: %q", stderr.String())
		}
	}
	if _, err := master.Write([]byte(e.tok["bob"] + "\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stdout.String(), "as ainotes:bob") {
			t.Fatalf("login: %d %q %q", code, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("login did not finish")
	}
	// What the terminal echoed is readable on the master side.
	_ = master.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 4096)
	n, _ := master.Read(buf)
	if strings.Contains(string(buf[:n]), e.tok["bob"][:12]) {
		t.Fatalf("the token was echoed: %q", buf[:n])
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Fatalf("echo not restored: %v", err)
	}
	if out := e.ok("", "whoami"); !strings.Contains(out, "ainotes:bob") {
		t.Fatalf("saved login: %q", out)
	}
}
