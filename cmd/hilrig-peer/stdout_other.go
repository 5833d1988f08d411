//go:build !unix

package main

import "os"

// protocolStdout: no peer library runs here (the peers are Linux
// packages); the protocol keeps standard output.
func protocolStdout() (*os.File, error) { return os.Stdout, nil }
