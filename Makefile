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

.PHONY: build test test-unit test-integration test-e2e
build:
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/k1s

# Unit tests: every package except the integration and e2e suites.
test-unit:
	$(GO) test -tags $(TAGS) $$($(GO) list ./... | grep -v /tests/)

# Integration: etcd + apiserver in process.
test-integration:
	$(GO) test -tags $(TAGS) -count=1 -timeout 20m ./tests/integration/...

# End to end: the built binary.
test-e2e: build
	K1S_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -count=1 -timeout 30m ./tests/e2e/...

test: test-unit test-integration test-e2e
