// Package freeport hands tests and benchmarks loopback TCP ports that were
// free a moment ago.
package freeport

import (
	"fmt"
	"net"
	"sync"
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Get returns a loopback TCP port that was free a moment ago, never the
// same one twice in one process: the kernel may give a just-closed port
// out again, and a server handed the same port for two listeners fails.
func Get() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
}
