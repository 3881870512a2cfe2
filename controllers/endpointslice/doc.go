// Package endpointslice owns the EndpointSlice controller: every Service
// with a selector (and not of type ExternalName) gets discovery.k8s.io/v1
// EndpointSlices listing the pods its selector matches in its namespace.
// Services without a selector (such as default/kubernetes, whose slice the
// apiserver keeps) are left alone, and Endpoints are not mirrored.
//
// There is one set of slices per address type the Service serves (its IP
// families) and per distinct set of resolved ports (a named target port
// may resolve to different numbers on different pods). Each endpoint is a
// pod with an IP of the address type that has not finished for good,
// terminating pods included, with conditions ready (serving and not
// terminating, or always with publishNotReadyAddresses), serving (the pod
// is Ready) and terminating, its node name and the node's zone, a Pod
// targetRef, the pod's hostname when it names the Service as its
// subdomain, and hints for the Service's trafficDistribution (its own zone;
// with PreferSameNode its node too) when every endpoint has a zone.
//
// Slices are owned by the Service (controller reference), are named after
// it with a generated suffix, carry the Service's labels plus
// kubernetes.io/service-name, endpointslice.kubernetes.io/managed-by=
// endpointslice-controller.k8s.io and, when headless,
// service.kubernetes.io/headless, and hold at most MaxEndpointsPerSlice
// endpoints. Changes are made with little churn, as upstream's reconciler
// does: endpoints that stay keep their slice, slices already being
// rewritten are filled first, the remaining endpoints go to an unchanged
// slice only when they all fit in it, new slices take over the names of
// slices about to be deleted, and a Service without endpoints keeps one
// empty placeholder slice. Writes are tracked by generation so that a sync
// never works from a cache older than its own last write.
package endpointslice
