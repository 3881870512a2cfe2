package eviction

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLocalStorageEviction(t *testing.T) {
	const Mi = 1 << 20
	limit := func(p *corev1.Pod, q string) *corev1.Pod {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(q)}
		return p
	}
	sized := func(p *corev1.Pod, q string) *corev1.Pod {
		l := resource.MustParse(q)
		p.Spec.Volumes[0].EmptyDir.SizeLimit = &l
		return p
	}
	withUsage := func(s statsapi.PodStats, rootfs, logs, total uint64) statsapi.PodStats {
		s.Containers[0].Rootfs.UsedBytes, s.Containers[0].Logs.UsedBytes = u64(rootfs), u64(logs)
		s.EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(total)}
		return s
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		stats statsapi.PodStats
		want  string
	}{
		{name: "within every limit", pod: sized(limit(pod("p", 0, nil, ""), "100Mi"), "50Mi"), stats: withUsage(podStats("p", 0, 10*Mi), 5*Mi, 1*Mi, 16*Mi)},
		{name: "emptyDir over its sizeLimit", pod: sized(pod("p", 0, nil, ""), "50Mi"), stats: podStats("p", 0, 60*Mi),
			want: `Usage of EmptyDir volume "data" exceeds the limit "50Mi". `},
		{name: "pod over its containers' limits", pod: limit(pod("p", 0, nil, ""), "100Mi"), stats: withUsage(podStats("p", 0, 90*Mi), 5*Mi, 10*Mi, 105*Mi),
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. "},
		{name: "container over its own limit", pod: limit(pod("p", 0, nil, ""), "10Mi"), stats: withUsage(podStats("p", 0, 0), 8*Mi, 4*Mi, 9*Mi),
			want: `Container c exceeded its local ephemeral storage limit "10Mi". `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []string
			m, err := New(Config{LocalStorageCapacityIsolation: true}, Deps{
				Summary:    &fakeSummary{s: summary(500*Mi, 500*Mi, 500*Mi, 1000*Mi, 500*Mi, 1000*Mi, tt.stats)},
				Clock:      clocktesting.NewFakeClock(time.Now()),
				ActivePods: func() []*corev1.Pod { return []*corev1.Pod{tt.pod} },
				KillPod: func(_ *corev1.Pod, grace int64, update func(*corev1.PodStatus)) error {
					var st corev1.PodStatus
					update(&st)
					if grace != 1 || st.Reason != "Evicted" || st.Phase != corev1.PodFailed {
						t.Errorf("kill grace %d status %+v", grace, st)
					}
					msgs = append(msgs, st.Message)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := m.(*manager).synchronize(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(ev) != 0 {
					t.Errorf("evicted %v: %q", names(ev), msgs)
				}
				return
			}
			if len(ev) != 1 || len(msgs) != 1 || msgs[0] != tt.want {
				t.Errorf("evicted %v with %q, want %q", names(ev), msgs, tt.want)
			}
		})
	}
}
