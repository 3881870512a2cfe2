// Package memtrim returns memory a long-running k1s process only needed
// while starting: the pages of its own executable that start-up touched
// (every package's init and the one-off construction code) and heap the
// garbage collector has freed.
//
// Executable pages are read-only file mappings: dropping them from the
// process's page tables loses nothing — they fault back in when code runs
// again. Writable mappings, and read-only ones holding pages the process
// wrote (a dynamically linked build's relocated RELRO page), are never
// touched.
//
// Dropping them from the page tables alone is not enough on kernels whose
// page cache holds large folios (ext4 and xfs since Linux 6.x): the
// start-up readahead filled the cache with folios of up to a few MiB, and a
// fault maps the whole folio, so a handful of faults brought tens of MiB
// back within seconds. Trim therefore also evicts the executable's pages
// that no process maps any more from the page cache, and marks the
// mappings random-access (no readahead): pages fault back one at a time,
// read again from disk, so what stays resident is what the process really
// runs.
package memtrim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Trim drops the executable's clean read-only pages from the page tables,
// evicts those no process maps from the page cache, and returns freed
// heap to the OS. It returns the number of bytes of mappings advised.
//
// Pages evicted are read from disk again when code needs them: call Trim
// once start-up is over, and TrimMapped while it goes on.
func Trim() (int64, error) {
	return trim(true)
}

// TrimMapped is Trim without the eviction: the pages stay in the page
// cache, so code still to run soon faults them back in cheaply.
func TrimMapped() (int64, error) {
	return trim(false)
}

func trim(evictCache bool) (int64, error) {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("find executable: %w", err)
	}
	mappings, err := exeMappings(exe)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range mappings {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_RANDOM); errno != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
		}
		total += int64(m.end - m.start)
	}
	if evictCache {
		if err := evict(exe); err != nil {
			return total, err
		}
	}
	return total, nil
}

// evict drops the file's cached pages that are not mapped by any process
// (the kernel keeps mapped and dirty ones).
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open executable: %w", err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evict %s from the page cache: %w", path, err)
	}
	return nil
}

type mapping struct{ start, end uintptr }

// exeMappings lists the mappings of the executable that are safe to drop:
// read-only, and holding no page the process wrote (a dynamically linked
// build's RELRO page is made read-only after the loader relocated it;
// dropping it would bring back the unrelocated file contents).
func exeMappings(exe string) ([]mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("read mappings: %w", err)
	}
	defer f.Close()
	return parseSmaps(f, exe)
}

// parseSmaps reads smaps(5) text for exeMappings.
func parseSmaps(f io.Reader, exe string) ([]mapping, error) {
	var out []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") {
			// A mapping's header line: range perms offset dev inode path.
			cur = nil
			if len(fields) < 6 || fields[5] != exe || fields[1][1] == 'w' {
				continue
			}
			start, end, ok := parseRange(fields[0])
			if !ok {
				continue
			}
			out = append(out, mapping{start, end})
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil && fields[0] == "Anonymous:" && len(fields) >= 2 && fields[1] != "0" {
			out = out[:len(out)-1] // written to: keep it
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mappings: %w", err)
	}
	return out, nil
}

func parseRange(s string) (uintptr, uintptr, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, false
	}
	return uintptr(start), uintptr(end), true
}
