// Package serviceaccount owns the ServiceAccount admission plugin of the
// k1s apiserver.
//
// On pod create it:
//   - defaults spec.serviceAccountName (and the deprecated
//     spec.serviceAccount alias) to "default";
//   - rejects the pod when that ServiceAccount does not exist in the pod's
//     namespace, asking the API directly (with a few retries for "default",
//     which a controller creates shortly after the namespace) when the
//     informer cache does not have it yet;
//   - unless spec.automountServiceAccountToken or the ServiceAccount's
//     automountServiceAccountToken is false, adds a projected
//     "kube-api-access-xxxxx" volume (bound token, the cluster CA from the
//     kube-root-ca.crt ConfigMap, the namespace) and mounts it read-only at
//     /var/run/secrets/kubernetes.io/serviceaccount in every container and
//     init container that has nothing mounted there yet;
//   - copies the ServiceAccount's imagePullSecrets when the pod has none;
//   - when the ServiceAccount carries the annotation
//     kubernetes.io/enforce-mountable-secrets=true, rejects pods that use
//     secrets the ServiceAccount does not list.
//
// Mirror pods (annotation kubernetes.io/config.mirror) are never changed:
// the kubelet would delete a mirror pod whose spec differs from its static
// pod. They are only checked: they may not name a ServiceAccount, reference
// a secret or project a ServiceAccount token.
//
// Ephemeral containers (the pods/ephemeralcontainers subresource) are not
// handled.
package serviceaccount
