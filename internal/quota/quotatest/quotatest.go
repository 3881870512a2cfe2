// Package quotatest has helpers for the quota tests of internal/quota and
// its users.
package quotatest

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

// RL builds a resource list from name, quantity pairs.
func RL(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// Container is a container with the given requests and limits.
func Container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// AssertUsage fails t when got and want differ.
func AssertUsage(t *testing.T, got, want corev1.ResourceList) {
	t.Helper()
	if !quota.Equals(got, want) {
		t.Errorf("usage = %s\nwant    %s", PrintList(got), PrintList(want))
	}
}

// PrintList prints a resource list sorted by name.
func PrintList(l corev1.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
