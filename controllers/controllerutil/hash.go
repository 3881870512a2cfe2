package controllerutil

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ComputeHash returns the pod-template-hash of template: FNV-32a over the
// template's deep dump, then collisionCount (if set) as 8 little-endian
// bytes, written in decimal and mapped onto the alphabet of
// rand.SafeEncodeString. It equals upstream's value for the same template
// and count, so ReplicaSets made by either keep their names.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}
