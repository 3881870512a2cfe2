package printers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Placeholders upstream's printers use for missing values.
const (
	none    = "<none>"
	unknown = "<unknown>"
	unset   = "<unset>"
)

// Column definitions shared by most resources.
func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

func col(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wideCol is a column kubectl shows only with -o wide.
func wideCol(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Priority: 1, Description: description}
}

func containersColumn() metav1.TableColumnDefinition {
	return wideCol("Containers", "string", "Container names in the pod template.")
}

func imagesColumn() metav1.TableColumnDefinition {
	return wideCol("Images", "string", "Container images in the pod template.")
}

// since renders the time elapsed from t to now, or <unknown> for a zero t.
func since(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func sinceMicro(now time.Time, t metav1.MicroTime) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// containerCells joins container names and images with commas.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i] = c.Name
		im[i] = c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// boolPtrString renders an optional boolean as True, False or <unset>.
func boolPtrString(b *bool) string {
	switch {
	case b == nil:
		return unset
	case *b:
		return "True"
	default:
		return "False"
	}
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// truncatedList joins up to limit entries and summarises the rest as
// "+ N more...", total being the number of entries there were.
func truncatedList(list []string, total, limit int) string {
	joined := strings.Join(list, ",")
	if total > limit {
		return fmt.Sprintf("%s + %d more...", joined, total-limit)
	}
	if joined == "" {
		return unset
	}
	return joined
}

// sortedUnique returns the distinct non-empty values in sorted order.
func sortedUnique(values []string) []string {
	seen := make(map[string]struct{}, len(values))
	out := make([]string, 0, len(values))
	for _, v := range values {
		if v == "" {
			continue
		}
		if _, ok := seen[v]; ok {
			continue
		}
		seen[v] = struct{}{}
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// accessModes renders PV access modes in the fixed order RWO, ROX, RWX,
// RWOP, each once.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := make(map[corev1.PersistentVolumeAccessMode]bool, len(modes))
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}
