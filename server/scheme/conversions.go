package scheme

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// queryOptionTypes are the subresource option kinds decoded from query
// parameters (pods/log, pods/exec, nodes/proxy ...).
var queryOptionTypes = []any{
	&corev1.PodLogOptions{},
	&corev1.PodExecOptions{},
	&corev1.PodAttachOptions{},
	&corev1.PodPortForwardOptions{},
	&corev1.PodProxyOptions{},
	&corev1.NodeProxyOptions{},
	&corev1.ServiceProxyOptions{},
}

func addQueryConversions(s *runtime.Scheme) error {
	for _, t := range queryOptionTypes {
		if err := s.AddConversionFunc((*url.Values)(nil), t, func(a, b any, _ conversion.Scope) error {
			return DecodeQuery(*a.(*url.Values), b)
		}); err != nil {
			return err
		}
	}
	return nil
}

// DecodeQuery fills the struct out points to from query parameters named by
// the fields' json tags. It supports the field types option structs use:
// strings, bools, integers, their pointers, string and int32 slices, and
// *metav1.Time (RFC 3339). Boolean parameters follow the apiserver's rule:
// present and not "false" (any case) or "0" means true.
func DecodeQuery(q url.Values, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("decode query: %T is not a pointer to a struct", out)
	}
	v = v.Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		values, ok := q[name]
		if !ok || len(values) == 0 {
			continue
		}
		if err := setField(v.Field(i), values, name); err != nil {
			return err
		}
	}
	return nil
}

var timeType = reflect.TypeOf(metav1.Time{})

func setField(fv reflect.Value, values []string, name string) error {
	first := values[0]
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(first)
	case reflect.Bool:
		fv.SetBool(parseBool(first))
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(first, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("query parameter %s: %q is not an integer", name, first)
		}
		fv.SetInt(n)
	case reflect.Slice:
		switch fv.Type().Elem().Kind() {
		case reflect.String:
			fv.Set(reflect.ValueOf(append([]string(nil), values...)).Convert(fv.Type()))
		case reflect.Int32:
			out := reflect.MakeSlice(fv.Type(), 0, len(values))
			for _, s := range values {
				for _, part := range strings.Split(s, ",") {
					n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 32)
					if err != nil {
						return fmt.Errorf("query parameter %s: %q is not an integer", name, part)
					}
					out = reflect.Append(out, reflect.ValueOf(int32(n)).Convert(fv.Type().Elem()))
				}
			}
			fv.Set(out)
		default:
			return fmt.Errorf("query parameter %s: unsupported slice type %s", name, fv.Type())
		}
	case reflect.Pointer:
		elem := reflect.New(fv.Type().Elem())
		if fv.Type().Elem() == timeType {
			ts, err := time.Parse(time.RFC3339, first)
			if err != nil {
				return fmt.Errorf("query parameter %s: %q is not an RFC 3339 time", name, first)
			}
			elem.Elem().Set(reflect.ValueOf(metav1.NewTime(ts)))
		} else if err := setField(elem.Elem(), values, name); err != nil {
			return err
		}
		fv.Set(elem)
	default:
		return fmt.Errorf("query parameter %s: unsupported type %s", name, fv.Type())
	}
	return nil
}

func parseBool(s string) bool {
	switch strings.ToLower(s) {
	case "0", "false":
		return false
	}
	return true
}

// SelectableFields lists, per kind, the field selector labels served beyond
// metadata.name and metadata.namespace. The registry's attribute functions
// produce the same labels.
var SelectableFields = map[schema.GroupVersionKind][]string{
	corev1.SchemeGroupVersion.WithKind("Pod"): {
		"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
		"spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
	},
	corev1.SchemeGroupVersion.WithKind("Node"):      {"spec.unschedulable"},
	corev1.SchemeGroupVersion.WithKind("Namespace"): {"status.phase"},
	corev1.SchemeGroupVersion.WithKind("Secret"):    {"type"},
	corev1.SchemeGroupVersion.WithKind("Service"):   {"spec.clusterIP", "spec.type"},
	corev1.SchemeGroupVersion.WithKind("Event"): {
		"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
		"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
		"reason", "reportingComponent", "source", "type",
	},
	corev1.SchemeGroupVersion.WithKind("ReplicationController"): {"status.replicas"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:          {"status.replicas"},
	{Group: "batch", Version: "v1", Kind: "Job"}:                {"status.successful"},
	{Group: "events.k8s.io", Version: "v1", Kind: "Event"}: {
		"regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
		"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
		"reason", "reportingController", "type",
	},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}: {"spec.signerName"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"}:        {"spec.signerName"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "PodCertificateRequest"}:     {"spec.signerName", "spec.podName", "spec.nodeName"},
	{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceSlice"}:                 {"spec.nodeName", "spec.driver", "spec.pool.name"},
}

func addFieldLabelConversions(s *runtime.Scheme) error {
	for gvk, labels := range SelectableFields {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, l := range labels {
			allowed[l] = true
		}
		fn := func(label, value string) (string, string, error) {
			if allowed[label] {
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		}
		for _, v := range []string{gvk.Version, runtime.APIVersionInternal} {
			if err := s.AddFieldLabelConversionFunc(gvk.GroupKind().WithVersion(v), fn); err != nil {
				return err
			}
		}
	}
	return nil
}
