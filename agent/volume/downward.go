package volume

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FieldPathValue is the value of a downward API fieldRef that a volume may
// project: metadata.name, metadata.namespace, metadata.uid,
// metadata.labels, metadata.annotations (one `key="value"` line per entry,
// sorted by key, values quoted as Go strings) and
// metadata.labels['key'] / metadata.annotations['key'] (the bare value).
// Environment variables may use more fields (spec.nodeName, status.podIP…);
// the agent resolves those itself and may call this for the rest.
func FieldPathValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if path, key, ok := splitSubscript(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		default:
			return "", fmt.Errorf("fieldPath %q does not support a subscript", fieldPath)
		}
	}
	switch fieldPath {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", fieldPath)
}

// splitSubscript splits "path['key']" into path and key.
func splitSubscript(fieldPath string) (path, key string, ok bool) {
	rest, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	path, key, found = strings.Cut(rest, "['")
	if !found || path == "" {
		return "", "", false
	}
	return path, key, true
}

// formatMap renders m as sorted `key="value"` lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}

// ResourceFieldValue is the value of a downward API resourceFieldRef for the
// named container of pod (limits.cpu, limits.memory,
// limits.ephemeral-storage, requests.*, and hugepages), divided by the
// selector's divisor (default 1) and rounded up. A container without a limit
// on cpu, memory or ephemeral-storage gets the node's allocatable amount.
// containerName empty means the selector's own containerName.
func ResourceFieldValue(pod *corev1.Pod, containerName string, sel *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	if containerName == "" {
		containerName = sel.ContainerName
	}
	c := findContainer(pod, containerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", containerName)
	}
	limits := c.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; ok && !q.IsZero() {
			continue
		}
		if q, ok := allocatable[name]; ok {
			limits[name] = q.DeepCopy()
		}
	}
	divisor := sel.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, found := strings.Cut(sel.Resource, ".")
	if !found || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %s", sel.Resource)
	}
	list := limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	rn := corev1.ResourceName(name)
	switch {
	case rn == corev1.ResourceCPU:
		q := list[rn]
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == corev1.ResourceMemory || rn == corev1.ResourceEphemeralStorage ||
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		q := list[rn]
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %s", sel.Resource)
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// downwardFiles builds the files of a downwardAPI volume or projection.
func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode int32, allocatable corev1.ResourceList, out map[string]file) error {
	var errs []string
	for _, item := range items {
		f := file{mode: defaultMode, uid: item.User}
		if item.Mode != nil {
			f.mode = *item.Mode
		}
		var v string
		var err error
		switch {
		case item.FieldRef != nil:
			v, err = FieldPathValue(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			v, err = ResourceFieldValue(pod, "", item.ResourceFieldRef, allocatable)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		f.data = []byte(v)
		out[item.Path] = f
	}
	if len(errs) > 0 {
		return fmt.Errorf("downward API: %s", strings.Join(errs, "; "))
	}
	return nil
}
