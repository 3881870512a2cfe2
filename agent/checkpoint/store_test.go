package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

type value struct {
	Data string `json:"data"`
}

func TestPutWritesAtomicallyAndOnlyChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoint")
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("checkpoint directory mode %o, want 0700", got)
	}
	steps := []struct {
		name        string
		data        string
		wantWritten bool
		sameInode   bool
	}{
		{"first", "a", true, false},
		{"unchanged", "a", false, true},
		{"changed", "b", true, false},
		{"unchanged again", "b", false, true},
	}
	path := filepath.Join(dir, Secrets, "ns_s.json")
	var last uint64
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := s.Writes()
			written, err := s.Put(Secrets, "ns", "s", value{st.data})
			if err != nil {
				t.Fatal(err)
			}
			if written != st.wantWritten {
				t.Errorf("written = %v, want %v", written, st.wantWritten)
			}
			if st.wantWritten != (s.Writes() == before+1) {
				t.Errorf("writes went from %d to %d", before, s.Writes())
			}
			ino := inode(t, path)
			if st.sameInode && ino != last {
				t.Errorf("an unchanged object was rewritten (inode %d, was %d)", ino, last)
			}
			last = ino
			if got := mode(t, path); got != 0o600 {
				t.Errorf("file mode %o, want 0600", got)
			}
			if got := mode(t, filepath.Dir(path)); got != 0o700 {
				t.Errorf("kind directory mode %o, want 0700", got)
			}
			var v value
			if ok, err := s.Get(Secrets, "ns", "s", &v); err != nil || !ok || v.Data != st.data {
				t.Errorf("Get = %v, %v, %v; want %q", v, ok, err, st.data)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".tmp-") {
					t.Errorf("temporary file left: %s", e.Name())
				}
			}
		})
	}
}

func TestReplacePrunesAndMarksListed(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Listed(Services) {
		t.Fatal("Listed before any list")
	}
	if err := s.Replace(Services, []Object{{"a", "x", value{"1"}}, {"b", "y", value{"2"}}}); err != nil {
		t.Fatal(err)
	}
	if !s.Listed(Services) {
		t.Fatal("not Listed after Replace")
	}
	before := s.Writes()
	if err := s.Replace(Services, []Object{{"b", "y", value{"2"}}, {"c", "z", value{"3"}}}); err != nil {
		t.Fatal(err)
	}
	// a/x removed, c/z written, b/y untouched.
	if got := s.Writes() - before; got != 2 {
		t.Errorf("Replace did %d writes, want 2", got)
	}
	names := s.Names(Services)
	if len(names) != 2 || names[0] != [2]string{"b", "y"} || names[1] != [2]string{"c", "z"} {
		t.Errorf("Names = %v", names)
	}
	if err := s.Replace(Services, nil); err != nil {
		t.Fatal(err)
	}
	if raw, _ := s.List(Services); len(raw) != 0 || s.Size() != 0 {
		t.Errorf("after an empty list: %d objects, %d bytes", len(raw), s.Size())
	}
	if !s.Listed(Services) {
		t.Error("an empty list must stay listed")
	}
}

func TestBound(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir(), MaxBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ConfigMaps, "ns", "a", value{strings.Repeat("x", 30)}); err != nil {
		t.Fatal(err)
	}
	size := s.Size()
	if _, err := s.Put(ConfigMaps, "ns", "b", value{strings.Repeat("y", 30)}); !errors.Is(err, ErrFull) {
		t.Fatalf("Put past the bound: %v, want ErrFull", err)
	}
	if s.Size() != size {
		t.Errorf("size %d after a refused Put, want %d", s.Size(), size)
	}
	if ok, _ := s.Get(ConfigMaps, "ns", "b", &value{}); ok {
		t.Error("refused object kept")
	}
	// Replacing an object counts its old size as freed.
	if _, err := s.Put(ConfigMaps, "ns", "a", value{strings.Repeat("z", 50)}); err != nil {
		t.Errorf("Put within the bound: %v", err)
	}
	if err := s.Delete(ConfigMaps, "ns", "a"); err != nil || s.Size() != 0 {
		t.Errorf("Delete: %v, size %d", err, s.Size())
	}
}

func TestNewIndexesExistingAndDropsPartialWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(Pods, "ns", "p", value{"v"}); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, Pods, ".tmp-ns_p.json-123")
	if err := os.WriteFile(tmp, []byte("{par"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("partial write not removed: %v", err)
	}
	if s2.Size() != s.Size() {
		t.Errorf("reopened size %d, want %d", s2.Size(), s.Size())
	}
	if written, err := s2.Put(Pods, "ns", "p", value{"v"}); err != nil || written {
		t.Errorf("Put of the kept content after reopening: written %v, %v", written, err)
	}
}

func TestInvalidNames(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, nn := range [][2]string{{"ns", ""}, {"ns", "../x"}, {"a_b", "c"}, {"", ".."}} {
		if _, err := s.Put(Pods, nn[0], nn[1], value{}); err == nil {
			t.Errorf("Put %q/%q: no error", nn[0], nn[1])
		}
	}
	if err := (Config{Dir: ""}).Validate(); err == nil {
		t.Error("empty Dir accepted")
	}
}
