// Package printers owns server-side table printing: the metav1.Table that
// the apiserver returns when a client such as `kubectl get` asks for
// application/json;as=Table. For each built-in resource k1s serves it
// produces the same columns, column priorities and cell values as upstream
// Kubernetes' human-readable printers, computed directly from the
// k8s.io/api v1 types. Resources without a dedicated printer (and CRDs)
// fall back to rest.NewDefaultTableConvertor: NAME and CREATED AT.
package printers
