// Package ociimage writes and reads single-layer container images as OCI
// image-layout tarballs (oci-layout, index.json and blobs/sha256/...), the
// format `ctr images import` and containerd's Go client import. k1s uses it
// to build the pause image it carries and the test images, from files on
// this machine only: no registry is ever involved.
//
// Write is deterministic: the same Image gives the same bytes (entries are
// sorted, times are fixed, gzip carries no name or time), so image digests
// stay stable from build to build.
package ociimage
