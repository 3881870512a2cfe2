package resolvconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want File
	}{
		{"empty", "", File{}},
		{
			name: "full",
			in: `# generated
; also a comment
nameserver 192.0.2.1
nameserver  2001:db8::53 # trailing comment
nameserver fe80::1%eth0
domain example.org
search a.example b.example
options ndots:2 timeout:1
options rotate
`,
			want: File{
				Nameservers: []string{"192.0.2.1", "2001:db8::53", "fe80::1%eth0"},
				Search:      []string{"a.example", "b.example"},
				Options:     []string{"ndots:2", "timeout:1", "rotate"},
			},
		},
		{
			name: "domain after search wins",
			in:   "search a.example b.example\ndomain c.example\n",
			want: File{Search: []string{"c.example"}},
		},
		{
			name: "malformed lines skipped",
			in:   "nameserver\nbogus 1.2.3.4\n\tnameserver\t192.0.2.9\n",
			want: File{Nameservers: []string{"192.0.2.9"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpstream(t *testing.T) {
	const resolved = "nameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch lan\n"
	tests := []struct {
		name     string
		etc      string
		resolved string // "" = file absent
		want     []string
		wantRead int
	}{
		{
			name:     "no stub: file as is",
			etc:      "nameserver 198.51.100.1\n",
			resolved: resolved,
			want:     []string{"198.51.100.1"},
			wantRead: 1,
		},
		{
			name:     "stub replaced by resolved's servers",
			etc:      "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n",
			resolved: resolved,
			want:     []string{"192.0.2.1", "192.0.2.2"},
			wantRead: 2,
		},
		{
			name:     "stub among others keeps order and dedupes",
			etc:      "nameserver 192.0.2.2\nnameserver 127.0.0.53\nnameserver 127.0.0.54\nnameserver 198.51.100.1\n",
			resolved: resolved,
			want:     []string{"192.0.2.2", "192.0.2.1", "198.51.100.1"},
			wantRead: 2,
		},
		{
			name:     "stub kept without resolved's file",
			etc:      "nameserver 127.0.0.53\n",
			want:     []string{"127.0.0.53"},
			wantRead: 1,
		},
		{
			name:     "stub kept when resolved lists nothing",
			etc:      "nameserver 127.0.0.53\n",
			resolved: "# no servers\n",
			want:     []string{"127.0.0.53"},
			wantRead: 2,
		},
		{
			name:     "other loopback resolvers are not the stub",
			etc:      "nameserver 127.0.0.1\n",
			resolved: resolved,
			want:     []string{"127.0.0.1"},
			wantRead: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			etc := filepath.Join(dir, "resolv.conf")
			res := filepath.Join(dir, "resolved.conf")
			if err := os.WriteFile(etc, []byte(tt.etc), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.resolved != "" {
				if err := os.WriteFile(res, []byte(tt.resolved), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, read, err := Upstream(etc, res)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, f.Nameservers); diff != "" {
				t.Errorf("nameservers (-want +got):\n%s", diff)
			}
			if len(read) != tt.wantRead {
				t.Errorf("read %v, want %d files", read, tt.wantRead)
			}
		})
	}
}

func TestUpstreamMissingFile(t *testing.T) {
	if _, _, err := Upstream(filepath.Join(t.TempDir(), "absent"), ""); err == nil {
		t.Fatal("Upstream of a missing file: no error")
	}
}
