package nodestatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

type pressure struct{ mem, disk, pid bool }

func (p pressure) IsUnderMemoryPressure() bool { return p.mem }
func (p pressure) IsUnderDiskPressure() bool   { return p.disk }
func (p pressure) IsUnderPIDPressure() bool    { return p.pid }

func TestPressureConditions(t *testing.T) {
	tests := []struct {
		name string
		p    Pressure
		want map[corev1.NodeConditionType]string // status/reason
	}{
		{name: "no eviction manager", p: nil, want: map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "False/KubeletHasSufficientMemory", corev1.NodeDiskPressure: "False/KubeletHasNoDiskPressure", corev1.NodePIDPressure: "False/KubeletHasSufficientPID"}},
		{name: "disk", p: pressure{disk: true}, want: map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "False/KubeletHasSufficientMemory", corev1.NodeDiskPressure: "True/KubeletHasDiskPressure", corev1.NodePIDPressure: "False/KubeletHasSufficientPID"}},
		{name: "memory and pids", p: pressure{mem: true, pid: true}, want: map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "True/KubeletHasInsufficientMemory", corev1.NodeDiskPressure: "False/KubeletHasNoDiskPressure", corev1.NodePIDPressure: "True/KubeletHasInsufficientPID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pressureConditions(tt.p)
			if len(got) != 3 {
				t.Fatalf("got %d conditions", len(got))
			}
			for _, c := range got {
				if s := string(c.Status) + "/" + c.Reason; s != tt.want[c.Type] {
					t.Errorf("%s = %s, want %s", c.Type, s, tt.want[c.Type])
				}
			}
		})
	}
}
