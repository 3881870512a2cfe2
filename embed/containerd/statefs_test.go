package containerd

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// fakeStateFS records the mounts asked for.
type fakeStateFS struct {
	fsType   int64
	statErr  error
	mounts   []string
	shims    int
	mountErr error
	mounted  []string
}

func (f *fakeStateFS) FSType(string) (int64, error)   { return f.fsType, f.statErr }
func (f *fakeStateFS) MountPoints() ([]string, error) { return f.mounts, nil }
func (f *fakeStateFS) LiveShims(string) (int, error)  { return f.shims, nil }
func (f *fakeStateFS) MountTmpfs(dir string) error {
	if f.mountErr != nil {
		return f.mountErr
	}
	f.mounted = append(f.mounted, dir)
	return nil
}

func TestEnsureStateTmpfs(t *testing.T) {
	const ext4 = 0xef53
	state := "/run/k1s/containerd"
	cases := []struct {
		name      string
		fs        fakeStateFS
		wantMount bool
		wantErr   string
	}{
		{name: "already tmpfs", fs: fakeStateFS{fsType: unix.TMPFS_MAGIC}},
		{name: "on disk, nothing in use", fs: fakeStateFS{fsType: ext4, mounts: []string{"/", "/run/k1s/containerd2/x", "/run"}}, wantMount: true},
		{name: "on disk, a netns still mounted", fs: fakeStateFS{fsType: ext4, mounts: []string{"/", state + "/io.containerd.grpc.v1.cri/netns/cni-1"}}},
		{name: "on disk, mounted on itself", fs: fakeStateFS{fsType: ext4, mounts: []string{"/", state}}},
		{name: "on disk, pods running", fs: fakeStateFS{fsType: ext4, mounts: []string{"/"}, shims: 2}},
		{name: "statfs fails", fs: fakeStateFS{statErr: errors.New("boom")}, wantErr: "statfs /run/k1s/containerd: boom"},
		{name: "mount refused", fs: fakeStateFS{fsType: ext4, mountErr: unix.EPERM}, wantErr: "mount a tmpfs on /run/k1s/containerd: operation not permitted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.fs
			mounted, err := ensureStateTmpfs(klog.Background(), state, &fs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if mounted != tc.wantMount {
				t.Errorf("mounted = %v, want %v", mounted, tc.wantMount)
			}
			if tc.wantMount && (len(fs.mounted) != 1 || fs.mounted[0] != state) {
				t.Errorf("tmpfs mounted on %q, want once on %s", fs.mounted, state)
			}
			if !tc.wantMount && len(fs.mounted) != 0 {
				t.Errorf("tmpfs mounted on %q, want none", fs.mounted)
			}
		})
	}
}
