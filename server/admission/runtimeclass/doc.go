// Package runtimeclass owns the RuntimeClass admission plugin of the k1s
// apiserver (upstream's plugin/pkg/admission/runtimeclass).
//
// On pod create, for a pod naming spec.runtimeClassName, the plugin reads
// the RuntimeClass (from its informer, else from the apiserver) and
// refuses the pod when there is none. It sets spec.overhead to the class's
// overhead.podFixed (a pod already giving a different overhead is
// refused) and merges the class's scheduling: its nodeSelector into the
// pod's (a conflicting value is refused) and its tolerations into the
// pod's (redundant ones dropped). On validation it refuses a pod whose
// overhead differs from its class's, or that has an overhead and no class
// defining one.
package runtimeclass
