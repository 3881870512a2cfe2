// Package serviceaccount owns service-account JSON Web Tokens: signing them
// (legacy secret-based tokens and bound tokens issued through the TokenRequest
// API), authenticating them as an authenticator.Token for the apiserver, the
// lookups that tie a token to live ServiceAccount, Pod, Secret and Node
// objects, and the on-disk signing key.
//
// Signing key choice: LoadOrCreateSigningKey generates an RSA 2048-bit key
// (PKCS#1 PEM, file mode 0600) when none exists, so tokens are RS256, the one
// algorithm every OIDC relying party must support. Existing RSA or ECDSA
// (P-256, P-384, P-521) keys in PKCS#1, SEC 1 or PKCS#8 PEM are loaded as they
// are; ECDSA keys sign with ES256/ES384/ES512.
//
// Token shapes follow upstream Kubernetes so that tokens are interchangeable
// with kube-apiserver's:
//
//   - Legacy tokens: iss "kubernetes/serviceaccount", sub
//     "system:serviceaccount:NS:NAME" and the flat private claims
//     kubernetes.io/serviceaccount/{namespace,secret.name,service-account.name,service-account.uid}.
//   - Bound tokens: iss (configured), aud, exp, iat, nbf, jti, sub, and a
//     "kubernetes.io" private claim holding namespace, serviceaccount, and at
//     most one of pod/secret/node (a pod-bound token also names the pod's
//     node), plus warnafter for the extended-expiration transition.
package serviceaccount
