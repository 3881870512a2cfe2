# k1s build. The tags keep containerd's unused snapshotters out and make the
# binary fully static; -X stamps the k1s and Kubernetes versions.
GO        ?= go
BIN       ?= bin/k1s
TAGS      := no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
KUBE_VERSION := v1.37.2
KUBE_MINOR   := 37
BUILD_DATE   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
TREE_STATE   := $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo clean || echo dirty)

define kubever
-X $(1).gitVersion=$(KUBE_VERSION)+k1s -X $(1).gitMajor=1 -X $(1).gitMinor=$(KUBE_MINOR) \
-X $(1).gitCommit=$(COMMIT) -X $(1).gitTreeState=$(TREE_STATE) -X $(1).buildDate=$(BUILD_DATE)
endef

LDFLAGS := -s -w \
	-X github.com/k1s/k1s/internal/version.Version=$(VERSION) \
	-X github.com/k1s/k1s/internal/version.GitCommit=$(COMMIT) \
	$(call kubever,k8s.io/component-base/version) \
	$(call kubever,k8s.io/client-go/pkg/version)

export CGO_ENABLED := 0

# Executables carried inside k1s (embed/containerd/assets, not committed):
# the runc shim, a small program of its own since one runs per pod, and
# the k1s.local/pause:3.10 sandbox image.
ASSETS    := embed/containerd/assets
SHIM      := $(ASSETS)/containerd-shim-runc-v2
PAUSE_TAR := $(ASSETS)/pause.tar
MKIMAGE   := _output/bin/mkimage
SMALL     := -trimpath -ldflags "-s -w"

.PHONY: build assets shim pause-image mkimage test-images test test-unit test-integration test-e2e
build: assets
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/k1s

assets: shim pause-image

# The shim is built with Go's previous garbage collector: the "green tea"
# collector, the default since Go 1.26, keeps ~0.1 MB more per shim, i.e.
# per pod (docs/BENCHMARKS.md). k1s itself keeps the default. This is a Go
# experiment: a later Go may drop it, and then rejects the setting and
# this line must go.
shim:
	GOEXPERIMENT=nogreenteagc $(GO) build -tags $(TAGS) $(SMALL) -o $(SHIM) ./embed/containerd/shim

mkimage:
	$(GO) build $(SMALL) -o $(MKIMAGE) ./internal/ociimage/cmd/mkimage

pause-image: mkimage
	$(GO) build $(SMALL) -o _output/pause/pause ./embed/containerd/pause
	$(MKIMAGE) -name k1s.local/pause:3.10 -o $(PAUSE_TAR) \
		-add _output/pause/pause:/pause:0755 -entrypoint '["/pause"]' -env GOMAXPROCS=1

# Test images for the e2e tests, from this repository and Debian packages
# only: _output/images/{busybox,testapp}.tar.
test-images: mkimage
	MKIMAGE=$(CURDIR)/$(MKIMAGE) scripts/build-test-images.sh

# Unit tests: every package except the integration and e2e suites.
test-unit:
	$(GO) test -tags $(TAGS) $$($(GO) list ./... | grep -v /tests/)

# Integration: etcd + apiserver in process (the kubectl tests run the
# built binary).
test-integration: build
	K1S_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -count=1 -timeout 20m ./tests/integration/...

# End to end: the built binary.
test-e2e: build test-images
	K1S_IMAGES=$(CURDIR)/_output/images K1S_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -count=1 -timeout 30m ./tests/e2e/...

test: test-unit test-integration test-e2e
