package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
)

// TokenGenerator signs service-account JWTs. Safe for concurrent use.
type TokenGenerator interface {
	// GenerateToken serialises privateClaims and claims into one JWT payload,
	// signs it and returns the compact serialisation. Registered claims win
	// over private claims of the same name, and the generator's issuer always
	// replaces any "iss" in either.
	GenerateToken(ctx context.Context, claims *jwt.Claims, privateClaims any) (string, error)
}

// NewTokenGenerator returns a TokenGenerator that sets "iss" to issuer and
// signs with key, which must be an *rsa.PrivateKey (RS256) or an
// *ecdsa.PrivateKey on P-256 (ES256), P-384 (ES384) or P-521 (ES512). The JWS
// header carries "kid" = KeyID(key.Public()).
//
// Legacy secret-based tokens need their own generator built with LegacyIssuer.
func NewTokenGenerator(issuer string, key crypto.Signer) (TokenGenerator, error) {
	if issuer == "" {
		return nil, fmt.Errorf("token generator: issuer is required")
	}
	var alg jose.SignatureAlgorithm
	switch k := key.(type) {
	case *rsa.PrivateKey:
		alg = jose.RS256
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		default:
			return nil, fmt.Errorf("token generator: unsupported ECDSA curve %s (want P-256, P-384 or P-521)", k.Curve.Params().Name)
		}
	case nil:
		return nil, fmt.Errorf("token generator: signing key is required")
	default:
		return nil, fmt.Errorf("token generator: unsupported signing key type %T (want *rsa.PrivateKey or *ecdsa.PrivateKey)", key)
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, fmt.Errorf("token generator: derive key ID: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: alg,
		Key: &jose.JSONWebKey{
			Key:       key,
			KeyID:     kid,
			Algorithm: string(alg),
			Use:       "sig",
		},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("token generator: create %s signer: %w", alg, err)
	}
	return &generator{issuer: issuer, signer: signer}, nil
}

type generator struct {
	issuer string
	signer jose.Signer
}

func (g *generator) GenerateToken(_ context.Context, claims *jwt.Claims, privateClaims any) (string, error) {
	b := jwt.Signed(g.signer)
	// Later Claims calls overwrite earlier ones key by key, so the order
	// below gives: issuer > registered claims > private claims.
	if privateClaims != nil {
		b = b.Claims(privateClaims)
	}
	if claims != nil {
		b = b.Claims(claims)
	}
	tok, err := b.Claims(&jwt.Claims{Issuer: g.issuer}).CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("sign service account token: %w", err)
	}
	return tok, nil
}
