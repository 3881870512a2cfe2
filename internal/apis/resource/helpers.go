package resource

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/k1s/k1s/internal/apis/core"
)

// The name rules of the group: drivers as CSI drivers, devices, requests
// and counters DNS labels, classes DNS subdomains.
func validateDriverName(name string, p *field.Path) field.ErrorList {
	return core.ValidateCSIDriverName(name, p)
}

func dnsLabel(value string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func dnsSubdomain(value string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

var (
	validateDeviceName  = dnsLabel
	validateRequestName = dnsLabel
	validateCounterName = dnsLabel
)

func validatePoolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, dnsSubdomain(part, p)...)
	}
	return errs
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	return core.ValidateNodeName(name, p)
}

func validateUID(uid string, p *field.Path) field.ErrorList {
	if err := uuid.Validate(uid); err != nil {
		return field.ErrorList{field.Invalid(p, uid, fmt.Sprintf("error validating uid: %v", err))}
	}
	if len(uid) != 36 || uid != strings.ToLower(uid) {
		return field.ErrorList{field.Invalid(p, uid, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")}
	}
	return nil
}

func validateLabelValue(value string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

// attributeMaxKeyLength bounds "<domain>/<id>" keys in error paths.
const attributeMaxKeyLength = resourcev1.DeviceMaxDomainLength + 1 + resourcev1.DeviceMaxIDLength

func validateQualifiedName(name resourcev1.QualifiedName, p *field.Path) field.ErrorList {
	parts := strings.Split(string(name), "/")
	var errs field.ErrorList
	switch len(parts) {
	case 1:
		errs = append(errs, validateCIdentifier(parts[0], p)...)
	case 2:
		if parts[0] == "" {
			errs = append(errs, field.Invalid(p, "", "the domain must not be empty"))
		} else {
			errs = append(errs, validateDriverName(parts[0], p)...)
		}
		if parts[1] == "" {
			errs = append(errs, field.Invalid(p, "", "the name must not be empty"))
		} else {
			errs = append(errs, validateCIdentifier(parts[1], p)...)
		}
	}
	return errs
}

func validateFullyQualifiedName(name resourcev1.FullyQualifiedName, p *field.Path) field.ErrorList {
	errs := validateQualifiedName(resourcev1.QualifiedName(name), p)
	if !strings.Contains(string(name), "/") {
		errs = append(errs, field.Invalid(p, name, "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

func validateCIdentifier(id string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range content.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	return errs
}

// validateSlice checks each item; more than maxSize items (when maxSize
// is not negative) is one TooMany error and nothing else.
func validateSlice[T any](items []T, maxSize int, item func(T, *field.Path) field.ErrorList, p *field.Path) field.ErrorList {
	if maxSize >= 0 && len(items) > maxSize {
		return field.ErrorList{field.TooMany(p, len(items), maxSize)}
	}
	var errs field.ErrorList
	for i, it := range items {
		errs = append(errs, item(it, p.Index(i))...)
	}
	return errs
}

// validateSet is validateSlice that also reports duplicate keys.
func validateSet[T any, K comparable](items []T, maxSize int, item func(T, *field.Path) field.ErrorList, key func(T) K, p *field.Path) field.ErrorList {
	if maxSize >= 0 && len(items) > maxSize {
		return field.ErrorList{field.TooMany(p, len(items), maxSize)}
	}
	errs := validateSlice(items, -1, item, p)
	seen := sets.New[K]()
	for i, it := range items {
		k := key(it)
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}

func stringKey(s string) string { return s }

// validateMap checks the keys and items of a map of at most maxSize
// entries (when not negative); keys longer than truncate are shortened in
// the middle in error paths.
func validateMap[K ~string, T any](m map[K]T, maxSize, truncate int, key func(K, *field.Path) field.ErrorList, item func(T, *field.Path) field.ErrorList, p *field.Path) field.ErrorList {
	if maxSize >= 0 && len(m) > maxSize {
		return field.ErrorList{field.TooMany(p, len(m), maxSize)}
	}
	var errs field.ErrorList
	for k, v := range m {
		errs = append(errs, key(k, p)...)
		errs = append(errs, item(v, p.Key(truncateKey(string(k), truncate)))...)
	}
	return errs
}

func truncateKey(s string, maxLen int) string {
	if maxLen < 16 {
		maxLen = 16
	}
	if len(s) <= maxLen {
		return s
	}
	const ellipsis = "..."
	rest := maxLen - len(ellipsis)
	return s[:(rest+1)/2] + ellipsis + s[len(s)-rest/2:]
}

// validateRawExtension requires a JSON object of at most maxLen bytes
// (the limit is not applied to what is already stored).
func validateRawExtension(raw runtime.RawExtension, p *field.Path, stored bool, maxLen int) field.ErrorList {
	var v any
	switch {
	case len(raw.Raw) == 0:
		return field.ErrorList{field.Required(p, "")}
	case !stored && len(raw.Raw) > maxLen:
		return field.ErrorList{field.TooLong(p, "", maxLen)}
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err.Error()))}
	}
	if v == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
	}
	return nil
}

// deviceKey identifies an allocated device (and its share).
func deviceKey(driver, pool, device string, shareID *string) string {
	k := driver + "/" + pool + "/" + device
	if shareID != nil {
		k += "/" + *shareID
	}
	return k
}
