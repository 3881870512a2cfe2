package memtrim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeRSS sums the resident kilobytes of this process's read-only
// mappings of its own executable.
func exeRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	inExe := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			inExe = len(fields) >= 6 && fields[5] == exe && fields[1][1] != 'w'
			continue
		}
		if inExe && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

func TestTrimDropsExecutablePages(t *testing.T) {
	before := exeRSS(t)
	if before == 0 {
		t.Fatal("no resident pages of the executable found before trimming")
	}
	n, err := Trim()
	if err != nil {
		t.Fatalf("Trim: %v", err)
	}
	if n == 0 {
		t.Fatal("Trim advised no mapping of the executable")
	}
	after := exeRSS(t)
	t.Logf("executable resident: %d KiB before, %d KiB after", before, after)
	if after >= before {
		t.Fatalf("executable resident %d KiB after trimming, not below the %d KiB before", after, before)
	}
}

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in         string
		start, end uintptr
		ok         bool
	}{
		{"400000-452000", 0x400000, 0x452000, true},
		{"7f00-7f00", 0, 0, false},
		{"zz-10", 0, 0, false},
		{"1000", 0, 0, false},
	} {
		start, end, ok := parseRange(tc.in)
		if ok != tc.ok || (ok && (start != tc.start || end != tc.end)) {
			t.Errorf("parseRange(%q) = %#x, %#x, %v; want %#x, %#x, %v", tc.in, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}

func TestOnlyCleanReadOnlyMappingsAreTrimmed(t *testing.T) {
	smaps := `00400000-00600000 r--p 00000000 fe:00 1 /k1s
Rss:                 100 kB
Anonymous:             0 kB
00600000-00900000 r-xp 00200000 fe:00 1 /k1s
Anonymous:             0 kB
00900000-00901000 r--p 00500000 fe:00 1 /k1s
Anonymous:             4 kB
00901000-00a00000 rw-p 00501000 fe:00 1 /k1s
Anonymous:            12 kB
00a00000-00b00000 r--p 00000000 fe:00 2 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Anonymous:          1024 kB
`
	got, err := parseSmaps(strings.NewReader(smaps), "/k1s")
	if err != nil {
		t.Fatal(err)
	}
	// The relocated read-only page (RELRO, written by the loader), the
	// writable data, other files and anonymous memory are kept.
	want := []mapping{{0x400000, 0x600000}, {0x600000, 0x900000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mappings = %x, want %x", got, want)
	}
}
