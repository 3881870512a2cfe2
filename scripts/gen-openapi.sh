#!/usr/bin/env bash
# gen-openapi.sh regenerates server/apiserver/openapi/zz_generated.openapi.go,
# the OpenAPI definitions for every type the k1s apiserver serves, with
# k8s.io/kube-openapi's openapi-gen at the version pinned in go.mod.
#
# Run from the repository root: scripts/gen-openapi.sh
# The tool is installed outside the module (GOBIN, default /tmp/k1s-gobin) so
# go.mod and go.sum are not touched. API rule violations are written to a
# report file (default /tmp/k1s-openapi-violations.report) and never fail the
# run: the input packages are upstream's and their known violations are theirs.
# Running it twice produces the same file.
set -euo pipefail

cd "$(git rev-parse --show-toplevel)"

# The openapi-gen version must match k8s.io/kube-openapi in go.mod.
KUBE_OPENAPI_VERSION="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
GOBIN_DIR="${GOBIN_DIR:-/tmp/k1s-gobin}"
REPORT_FILE="${REPORT_FILE:-/tmp/k1s-openapi-violations.report}"
OUTPUT_DIR="server/apiserver/openapi"
OUTPUT_PKG="github.com/k1s/k1s/${OUTPUT_DIR}"
OUTPUT_FILE="zz_generated.openapi.go"

TOOL="${GOBIN_DIR}/openapi-gen"
STAMP="${GOBIN_DIR}/openapi-gen.version"
if [[ ! -x "${TOOL}" || "$(cat "${STAMP}" 2>/dev/null)" != "${KUBE_OPENAPI_VERSION}" ]]; then
	mkdir -p "${GOBIN_DIR}"
	# Outside the module, so the install cannot edit our go.mod.
	(cd / && GOBIN="${GOBIN_DIR}" GOFLAGS=-mod=mod GOWORK=off \
		go install "k8s.io/kube-openapi/cmd/openapi-gen@${KUBE_OPENAPI_VERSION}")
	echo "${KUBE_OPENAPI_VERSION}" >"${STAMP}"
fi

# Every package whose types the apiserver serves or references. All carry
# +k8s:openapi-model-package, so definition keys are the REST-friendly model
# names (io.k8s.api.core.v1.Pod). No --output-model-name-file: the inputs
# live in the read-only module cache and already ship their
# zz_generated.model_name.go.
INPUTS=(
	k8s.io/api/core/v1
	k8s.io/api/apps/v1
	k8s.io/api/batch/v1
	k8s.io/api/autoscaling/v1
	k8s.io/api/autoscaling/v2
	k8s.io/api/coordination/v1
	k8s.io/api/discovery/v1
	k8s.io/api/events/v1
	k8s.io/api/rbac/v1
	k8s.io/api/storage/v1
	k8s.io/api/networking/v1
	k8s.io/api/policy/v1
	k8s.io/api/scheduling/v1
	# batch/v1 JobSchedulingConfiguration references these alpha types; the
	# group itself is not served, but the references must resolve.
	k8s.io/api/scheduling/v1alpha3
	k8s.io/api/certificates/v1
	k8s.io/api/authentication/v1
	k8s.io/api/authorization/v1
	k8s.io/api/admissionregistration/v1
	k8s.io/api/node/v1
	k8s.io/api/resource/v1
	k8s.io/api/storagemigration/v1
	k8s.io/api/flowcontrol/v1
	k8s.io/api/apidiscovery/v2
	k8s.io/apimachinery/pkg/apis/meta/v1
	k8s.io/apimachinery/pkg/runtime
	k8s.io/apimachinery/pkg/version
	k8s.io/apimachinery/pkg/util/intstr
	k8s.io/apimachinery/pkg/api/resource
	k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
	k8s.io/kube-aggregator/pkg/apis/apiregistration/v1
)

HEADER="$(mktemp)"
trap 'rm -f "${HEADER}"' EXIT
printf '// Regenerate with scripts/gen-openapi.sh.\n' >"${HEADER}"

rm -f "${OUTPUT_DIR}/${OUTPUT_FILE}"
"${TOOL}" \
	--go-header-file "${HEADER}" \
	--output-dir "${OUTPUT_DIR}" \
	--output-pkg "${OUTPUT_PKG}" \
	--output-file "${OUTPUT_FILE}" \
	--report-filename "${REPORT_FILE}" \
	"${INPUTS[@]}"

echo "wrote ${OUTPUT_DIR}/${OUTPUT_FILE}; API rule violations: ${REPORT_FILE} ($(wc -l <"${REPORT_FILE}") lines)"
