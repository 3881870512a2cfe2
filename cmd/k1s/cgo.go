//go:build cgo

package main

// k1s is one static binary, built with cgo off (`make build`, or
// `CGO_ENABLED=0 go build -tags no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo ./cmd/k1s`).
// With cgo on (the go command's default where a C compiler is found, so a
// plain `go build` or `go install`), the binary links libc dynamically,
// routes the Go runtime's mmap through C (runtime.callCgoMmap) and pulls
// in cgo code k1s does not use (containerd's btrfs snapshotter, a PKCS#11
// binding, plugin); such builds were seen to die with SIGSEGV at PC=0 in
// runtime.callCgoMmap under load. Refuse to compile instead: the constant
// below is a string, not an int, and the compiler quotes it.
const _ int = "build k1s with CGO_ENABLED=0: a cgo build is not supported (see README.md, Building)"
