package serviceaccount

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
)

// KeyID returns the JWS "kid" for a public key: the unpadded base64url
// encoding of the SHA-256 digest of the key's PKIX DER form. It is one-way, so
// publishing it reveals nothing about the key, and it matches the key IDs
// kube-apiserver puts in its tokens and OIDC discovery document.
func KeyID(publicKey crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(publicKey)
	if err != nil {
		return "", fmt.Errorf("marshal public key to PKIX DER: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
