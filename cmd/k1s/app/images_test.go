package app

import (
	"bytes"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPrintImages(t *testing.T) {
	var out bytes.Buffer
	err := printImages(&out, []*runtimeapi.Image{
		{Id: "sha256:0123456789abcdef0123", RepoTags: []string{"k1s.local/testapp:1"}, Size: 2_500_000},
		{Id: "sha256:fedcba9876543210fedc", RepoTags: []string{"k1s.local/pause:3.10"}, Size: 650_000, Pinned: true},
		{Id: "sha256:aaaa", Size: 12},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "IMAGE                 IMAGE ID      SIZE      \n" +
		"<none>                aaaa          12B       \n" +
		"k1s.local/pause:3.10  fedcba987654  634.8KiB  pinned\n" +
		"k1s.local/testapp:1   0123456789ab  2.4MiB    \n"
	if out.String() != want {
		t.Errorf("printImages:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestHumanSize(t *testing.T) {
	cases := map[uint64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 5 << 20: "5.0MiB", 3 << 30: "3.0GiB"}
	for n, want := range cases {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
