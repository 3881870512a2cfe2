// Package openapi owns the generated OpenAPI definitions for every type the
// k1s apiserver serves: the k8s.io/api v1 groups, apidiscovery/v2, the
// apimachinery meta/runtime/version/intstr/resource types, and
// apiextensions.k8s.io/v1.
//
// zz_generated.openapi.go is produced by scripts/gen-openapi.sh with
// k8s.io/kube-openapi's openapi-gen; do not edit it by hand.
//
// Definition keys are the REST-friendly OpenAPI model names returned by each
// type's OpenAPIModelName method, for example "io.k8s.api.core.v1.Pod" and
// "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", not Go package paths.
// They are the same names runtime.Scheme.ToOpenAPIDefinitionName returns, so
// the apiserver pairs GetOpenAPIDefinitions with
// k8s.io/apiserver/pkg/endpoints/openapi.NewDefinitionNamer(scheme) in
// genericapiserver.DefaultOpenAPIConfig and DefaultOpenAPIV3Config.
package openapi
