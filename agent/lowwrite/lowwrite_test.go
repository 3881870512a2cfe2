package lowwrite

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

type fakeMachine struct {
	fsType  int64
	entries int
	mounts  []string
	failOn  string
	mounted map[string]int64
}

func (f *fakeMachine) err(op string) error {
	if f.failOn == op {
		return errors.New(op + " failed")
	}
	return nil
}

func (f *fakeMachine) FSType(string) (int64, error)   { return f.fsType, f.err("statfs") }
func (f *fakeMachine) MkdirAll(string) error          { return f.err("mkdir") }
func (f *fakeMachine) Entries(string) (int, error)    { return f.entries, f.err("entries") }
func (f *fakeMachine) MountPoints() ([]string, error) { return f.mounts, f.err("mounts") }
func (f *fakeMachine) MountTmpfs(dir string, size int64) error {
	if err := f.err("mount"); err != nil {
		return err
	}
	if f.mounted == nil {
		f.mounted = map[string]int64{}
	}
	f.mounted[dir] = size
	return nil
}

const ext4 = 0xef53

func TestEnsureLogTmpfs(t *testing.T) {
	live := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	tests := []struct {
		name    string
		m       fakeMachine
		live    func() (int, error)
		mounted bool
		err     string
	}{
		{"empty dir on disk: mounted", fakeMachine{fsType: ext4}, live(3), true, ""},
		{"already a tmpfs: left", fakeMachine{fsType: unix.TMPFS_MAGIC, entries: 5}, live(3), false, ""},
		{"stale logs, no container running: mounted over them", fakeMachine{fsType: ext4, entries: 4}, live(0), true, ""},
		{"logs of running containers: stays on disk", fakeMachine{fsType: ext4, entries: 4}, live(2), false, ""},
		{"logs, external runtime (unknown): stays on disk", fakeMachine{fsType: ext4, entries: 4}, nil, false, ""},
		{"a mount under it: stays on disk", fakeMachine{fsType: ext4, mounts: []string{"/", "/var/log/pods/x"}}, live(0), false, ""},
		{"a sibling mount does not count", fakeMachine{fsType: ext4, mounts: []string{"/var/log/pods-old"}}, live(0), true, ""},
		{"mount fails: error", fakeMachine{fsType: ext4, failOn: "mount"}, live(0), false, "mount a tmpfs on the pod log directory /var/log/pods (--low-write)"},
		{"mkdir fails: error", fakeMachine{fsType: ext4, failOn: "mkdir"}, live(0), false, "create the pod log directory"},
		{"live count fails: error", fakeMachine{fsType: ext4, entries: 1}, func() (int, error) { return 0, errors.New("boom") }, false, "look for running containers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			got, err := EnsureLogTmpfs(klog.Background(), &m, "/var/log/pods", 64<<20, tc.live)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.mounted {
				t.Fatalf("mounted = %v, want %v", got, tc.mounted)
			}
			if tc.mounted && m.mounted["/var/log/pods"] != 64<<20 {
				t.Errorf("mounts = %v", m.mounted)
			}
			if !tc.mounted && len(m.mounted) != 0 {
				t.Errorf("mounted %v", m.mounted)
			}
		})
	}
}

func TestParseLogSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"", 64 << 20, false},
		{"64Mi", 64 << 20, false},
		{"1Gi", 1 << 30, false},
		{"100M", 100e6, false},
		{"1Ki", 0, true},
		{"lots", 0, true},
		{"-5Mi", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseLogSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseLogSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "--low-write-log-size") {
			t.Errorf("error %q does not name the flag", err)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	in := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /var/log/pods rw,nosuid - tmpfs tmpfs rw,size=65536k
31 22 0:26 / /mnt/with\040space rw - tmpfs tmpfs rw
`
	got, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/", "/var/log/pods", "/mnt/with space"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("mount points = %q, want %q", got, want)
	}
}
