package thresholds

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseFlag(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    map[Signal]string // signal → Value.String()
		wantErr string
	}{
		{name: "empty", value: "", want: map[Signal]string{}},
		{name: "default", value: "imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%",
			want: map[Signal]string{ImageFsAvailable: "15%", MemoryAvailable: "100Mi", NodeFsAvailable: "10%", NodeFsInodesFree: "5%"}},
		{name: "0% and 100% turn a signal off", value: "memory.available<0%,nodefs.available<100%,pid.available<1k",
			want: map[Signal]string{PIDAvailable: "1k"}},
		{name: "unknown signal", value: "memory.free<1Gi", wantErr: `--eviction-hard: unsupported eviction signal "memory.free"`},
		{name: "no operator", value: "memory.available=1Gi", wantErr: `--eviction-hard: "memory.available=1Gi" is not signal<value`},
		{name: "negative quantity", value: "memory.available<-1Gi", wantErr: "--eviction-hard: memory.available: threshold -1Gi must be positive"},
		{name: "percentage over 100", value: "nodefs.available<120%", wantErr: "between 0% and 100%"},
		{name: "bad quantity", value: "memory.available<lots", wantErr: `memory.available: "lots" is not a quantity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlag("eviction-hard", tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("thresholds %v, want %v", got, tt.want)
			}
			for _, th := range got {
				if tt.want[th.Signal] != th.Value.String() {
					t.Errorf("%s = %s, want %s", th.Signal, th.Value.String(), tt.want[th.Signal])
				}
			}
		})
	}
}

func TestHardEvictionReservation(t *testing.T) {
	hard, err := ParseFlag("eviction-hard", "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%")
	if err != nil {
		t.Fatal(err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("4Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	got := HardEvictionReservation(hard, capacity)
	if m := got[corev1.ResourceMemory]; m.Value() != 100<<20 {
		t.Errorf("memory reservation %s, want 100Mi", m.String())
	}
	// A percentage is a float32 of capacity, as upstream's.
	if s, want := got[corev1.ResourceEphemeralStorage], int64(float64(100<<30)*float64(float32(0.1))); s.Value() != want {
		t.Errorf("storage reservation %d, want %d (10%% of 100Gi)", s.Value(), want)
	}
	if len(got) != 2 {
		t.Errorf("reservation %v: imagefs reserves nothing", got)
	}
}
