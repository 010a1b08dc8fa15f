//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import (
	"context"
	"os"
)

// isTerminal is false where the client cannot switch echo off: login then
// reads the token as a plain line (use --token-stdin).
func isTerminal(*os.File) bool { return false }

func readSecret(ctx context.Context, f *os.File) (string, error) { return readLineCtx(ctx, f) }
