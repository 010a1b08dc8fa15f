package testenv

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// motoScript serves moto's DynamoDB one request at a time; see the script.
//
//go:embed motoserver.py
var motoScript string

// Moto is a running moto server (DynamoDB and DynamoDB Streams) whose
// requests are serialized: moto mirrors DynamoDB's validation, and with one
// request at a time its conditional writes and transactions are atomic too.
type Moto struct {
	URL     string        // http://127.0.0.1:PORT
	Version string        // moto's version
	Startup time.Duration // from launching Python to the port being known

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{} // closed when the process has exited
	once   sync.Once
}

// motoPython is the interpreter: $PARLEY_PYTHON, else the repository's
// .venv (where `make moto` installs moto), else python3 on the PATH.
func motoPython() string {
	if p := os.Getenv("PARLEY_PYTHON"); p != "" {
		return p
	}
	if root, ok := repoRoot(); ok {
		p := filepath.Join(root, ".venv", "bin", "python")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "python3"
}

// repoRoot is the nearest directory at or above the working directory (a
// test's package directory) that holds go.mod.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// StartMoto starts a moto server on a loopback port that the server itself
// binds and reports. The server exits when Close is called or when this
// process ends (it watches its stdin).
func StartMoto() (*Moto, error) {
	began := time.Now()
	python := motoPython()
	cmd := exec.Command(python, "-c", motoScript)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	m := &Moto{cmd: cmd, stdin: stdin, stderr: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stderr = m.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	go func() {
		_ = cmd.Wait()
		close(m.done)
	}()

	type header struct {
		port, version string
		err           error
	}
	got := make(chan header, 1)
	go func() {
		r := bufio.NewReader(stdout)
		port, err := r.ReadString('\n')
		if err != nil {
			got <- header{err: err}
			return
		}
		version, err := r.ReadString('\n')
		got <- header{port: strings.TrimSpace(port), version: strings.TrimSpace(version), err: err}
		// Whatever moto prints later must not fill the pipe.
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case h := <-got:
		if h.err == nil {
			if _, perr := strconv.ParseUint(h.port, 10, 16); perr != nil {
				h.err = fmt.Errorf("first line %q is not a port", h.port)
			}
		}
		if h.err != nil {
			m.Close()
			return nil, fmt.Errorf("%s running the moto server: %v; %s", python, h.err, m.exitDetail())
		}
		m.URL = "http://127.0.0.1:" + h.port
		m.Version = h.version
		m.Startup = time.Since(began)
		return m, nil
	case <-time.After(2 * time.Minute):
		m.Close()
		return nil, fmt.Errorf("%s running the moto server: no port after 2 minutes; %s", python, m.exitDetail())
	}
}

// exitDetail describes how the process ended and what it wrote to stderr.
func (m *Moto) exitDetail() string {
	<-m.done
	s := "exit: " + m.cmd.ProcessState.String()
	if e := strings.TrimSpace(m.stderr.String()); e != "" {
		s += "; stderr: " + e
	}
	return s
}

// Stderr returns the last 16 KiB the server wrote to stderr (tracebacks of
// requests that failed inside moto, for one).
func (m *Moto) Stderr() string { return m.stderr.String() }

// Close stops the server: it exits when its stdin closes; if it has not
// within five seconds, it is killed.
func (m *Moto) Close() {
	m.once.Do(func() {
		_ = m.stdin.Close()
		select {
		case <-m.done:
		case <-time.After(5 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
}

var shared struct {
	once sync.Once
	moto *Moto
	err  error
}

// SharedMoto returns the one moto server of this test binary, started on
// first use; it lives until the binary exits. Each test creates its own
// table (a unique name) on it. Without Python and moto the test fails: moto
// is part of the test environment (`make test` installs it).
func SharedMoto(t testing.TB) *Moto {
	t.Helper()
	shared.once.Do(func() {
		shared.moto, shared.err = StartMoto()
	})
	if shared.err != nil {
		t.Fatalf("moto_server not available: run `make test`, which installs it into .venv: %v", shared.err)
	}
	return shared.moto
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
