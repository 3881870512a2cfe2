// Package endpoints owns the Endpoints controller: every Service with a
// selector (and not of type ExternalName) gets an Endpoints object of the
// same name listing the pods its selector matches in its namespace.
//
// A pod is listed when it has an IP of the Service's primary family and
// has not finished for good (Succeeded/Failed under a restart policy that
// will not restart it); terminating pods are left out unless the Service
// publishes not-ready addresses. Ready pods (or every listed pod with
// publishNotReadyAddresses) go to addresses, the others to
// notReadyAddresses, each with its node name, a Pod targetRef and, when
// the pod names the Service as its subdomain, its hostname. Each Service
// port is resolved per pod (named target ports through the pod's container
// ports; a pod without the named port is left out of that port), and
// subsets group the addresses that share the same ports. A headless
// Service without ports lists its pods without ports.
//
// The Endpoints carries the Service's labels plus
// endpoints.kubernetes.io/managed-by=endpoint-controller and, for a
// headless Service, service.kubernetes.io/headless; at most 1000
// addresses are kept (ready ones first), with the annotation
// endpoints.kubernetes.io/over-capacity=truncated when more were found;
// endpoints.kubernetes.io/last-change-trigger-time records the earliest
// pod or Service change that led to the update. The Endpoints of a deleted
// Service are deleted, and so, once at start-up, are Endpoints left
// without a Service (except leader-election records).
package endpoints
