// Package localdb runs the embedded DynamoDB-compatible server
// (github.com/truora/minidyn/server) in this process, on a loopback port,
// spoken to over the real DynamoDB wire protocol. Data lives in memory and is
// gone when the process ends.
package localdb

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/truora/minidyn/server"
)

// DB is a running embedded server.
type DB struct {
	URL    string
	Server *server.Server // for failure emulation in tests
	http   *http.Server
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves.
func Start(addr string) (*DB, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := server.NewServer()
	h := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := h.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return &DB{URL: "http://" + ln.Addr().String(), Server: srv, http: h}, nil
}

// Close stops the server.
func (d *DB) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return d.http.Shutdown(ctx)
}
