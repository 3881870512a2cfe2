package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"

	certificatesv1 "k8s.io/api/certificates/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// MaxTrustBundleSize is the largest spec.trustBundle accepted (1 MiB).
const MaxTrustBundleSize = 1 << 20

// ValidateClusterTrustBundle validates a ClusterTrustBundle on create: its
// name fits its signer (see core.ClusterTrustBundleNameFunc), the signer
// name is well formed, and the bundle is one or more distinct CA
// certificates in PEM blocks without headers.
func ValidateClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) field.ErrorList {
	return validateClusterTrustBundle(b, true)
}

func validateClusterTrustBundle(b *certificatesv1.ClusterTrustBundle, parseBundle bool) field.ErrorList {
	errs := validateObjectMeta(&b.ObjectMeta, false, core.ClusterTrustBundleNameFunc(b.Spec.SignerName))
	if b.Spec.SignerName != "" {
		errs = append(errs, ValidateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	if parseBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
	}
	return errs
}

// ValidateClusterTrustBundleUpdate validates an update: signerName is
// immutable; an unchanged bundle is not parsed again.
func ValidateClusterTrustBundleUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	errs := validateClusterTrustBundle(b, b.Spec.TrustBundle != old.Spec.TrustBundle)
	errs = append(errs, validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))...)
}

func validateTrustBundle(p *field.Path, in string) field.ErrorList {
	if len(in) > MaxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", MaxTrustBundleSize)}
	}
	const omitted = "<value omitted>"
	var errs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("entry %d has bad block type: %v", i, b.Type)))
			continue
		}
		if len(b.Headers) != 0 {
			errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("entry %d has PEM block headers", i)))
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("entry %d does not parse as X.509", i)))
			continue
		}
		if !cert.IsCA {
			errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("entry %d does not have the CA bit set", i)))
			continue
		}
		if !cert.BasicConstraintsValid {
			errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("entry %d has invalid basic constraints", i)))
			continue
		}
		seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
	}
	if len(errs) != 0 {
		return errs
	}
	if len(seen) == 0 {
		return field.ErrorList{field.Invalid(p, omitted, "at least one trust anchor must be provided")}
	}
	var dups [][]int
	for _, idx := range seen {
		if len(idx) > 1 {
			dups = append(dups, idx)
		}
	}
	sort.Slice(dups, func(i, j int) bool { return dups[i][0] < dups[j][0] })
	for _, idx := range dups {
		errs = append(errs, field.Invalid(p, omitted, fmt.Sprintf("duplicate trust anchor (indices %v)", idx)))
	}
	return errs
}
