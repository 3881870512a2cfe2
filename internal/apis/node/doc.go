// Package node owns validation for the node.k8s.io/v1 kind the k1s
// apiserver serves: RuntimeClass.
//
// It works directly on the versioned k8s.io/api/node/v1 types. Behaviour
// follows upstream Kubernetes v1.37: the handler is a required, immutable
// DNS label; the overhead is checked as container limits; scheduling's node
// selector as labels and its tolerations as a pod's, each toleration once.
// RuntimeClass has no defaulted fields. Field paths and error types match
// upstream. The code is written for k1s.
package node
