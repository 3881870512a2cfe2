// Package server owns the node agent's HTTP API, the kubelet API of a k1s
// node: the authenticated TLS listener (default :10250) serving /pods,
// /healthz, /containerLogs, /exec, /attach, /portForward, /metrics and
// /stats; the unauthenticated loopback health listener (default
// 127.0.0.1:10248); and the optional read-only listener (--read-only-port).
//
// Every request on the main listener is authenticated (client certificate
// from the client CA, or a bearer token checked with a TokenReview) and
// authorized with a SubjectAccessReview on the node resource, mapped from
// the request as the upstream kubelet does (see RequestAttributes).
// Streaming requests are not served here: the agent asks the CRI runtime
// for a streaming URL and proxies the client's upgraded connection to the
// runtime's streaming server.
package server
