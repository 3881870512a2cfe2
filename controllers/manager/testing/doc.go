// Package testing holds fakes for code built on the controller manager: a
// ClientBuilder that hands out fixed (usually fake) clients and records the
// names asked for.
package testing
