// Command mkimage writes a single-layer OCI image-layout tarball from files
// on this machine. The Makefile and scripts/build-test-images.sh use it:
//
//	mkimage -name k1s.local/pause:3.10 -o pause.tar \
//	    -add _output/pause/pause:/pause:0755 -entrypoint '["/pause"]'
//
// Flags that take a list may be repeated: -add SRC:DST[:MODE] copies a file
// (octal MODE, default the source's permissions), -symlink PATH:TARGET makes
// a symlink, -dir PATH[:MODE] a directory, -env KEY=VALUE sets the
// environment. -entrypoint and -cmd take a JSON array of strings.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/k1s/k1s/internal/ociimage"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var (
		name, out, arch, entrypoint, cmd, workdir, user, stopSignal string
		adds, symlinks, dirs, envs, ports, labels                   listFlag
	)
	flags.StringVar(&name, "name", "", "full image name, e.g. k1s.local/pause:3.10 (required)")
	flags.StringVar(&out, "o", "", "output tarball (required)")
	flags.StringVar(&arch, "arch", "", "architecture (default: this machine's)")
	flags.StringVar(&entrypoint, "entrypoint", "", "entrypoint as a JSON array")
	flags.StringVar(&cmd, "cmd", "", "command as a JSON array")
	flags.StringVar(&workdir, "workdir", "", "working directory")
	flags.StringVar(&user, "user", "", "user[:group] to run as")
	flags.StringVar(&stopSignal, "stop-signal", "", "stop signal")
	flags.Var(&adds, "add", "SRC:DST[:MODE] file to copy (repeatable)")
	flags.Var(&symlinks, "symlink", "PATH:TARGET symlink (repeatable)")
	flags.Var(&dirs, "dir", "PATH[:MODE] directory (repeatable)")
	flags.Var(&envs, "env", "KEY=VALUE (repeatable)")
	flags.Var(&ports, "expose", "PORT/PROTO (repeatable)")
	flags.Var(&labels, "label", "KEY=VALUE image label (repeatable)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if name == "" || out == "" {
		return fmt.Errorf("-name and -o are required")
	}
	img := ociimage.Image{
		Name:         name,
		Architecture: arch,
		Config: ociimage.Config{
			Env: envs, WorkingDir: workdir, User: user, ExposedPorts: ports, StopSignal: stopSignal,
		},
	}
	if entrypoint != "" {
		if err := json.Unmarshal([]byte(entrypoint), &img.Config.Entrypoint); err != nil {
			return fmt.Errorf("-entrypoint: not a JSON array of strings: %w", err)
		}
	}
	if cmd != "" {
		if err := json.Unmarshal([]byte(cmd), &img.Config.Cmd); err != nil {
			return fmt.Errorf("-cmd: not a JSON array of strings: %w", err)
		}
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("-label %q: want KEY=VALUE", l)
		}
		if img.Config.Labels == nil {
			img.Config.Labels = map[string]string{}
		}
		img.Config.Labels[k] = v
	}
	for _, a := range adds {
		parts := strings.Split(a, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return fmt.Errorf("-add %q: want SRC:DST[:MODE]", a)
		}
		st, err := os.Stat(parts[0])
		if err != nil {
			return fmt.Errorf("-add %q: %w", a, err)
		}
		mode := st.Mode().Perm()
		if len(parts) == 3 {
			if mode, err = parseMode(parts[2]); err != nil {
				return fmt.Errorf("-add %q: %w", a, err)
			}
		}
		img.Entries = append(img.Entries, ociimage.Entry{Path: parts[1], Source: parts[0], Mode: mode})
	}
	for _, s := range symlinks {
		p, target, ok := strings.Cut(s, ":")
		if !ok {
			return fmt.Errorf("-symlink %q: want PATH:TARGET", s)
		}
		img.Entries = append(img.Entries, ociimage.Entry{Path: p, Type: ociimage.Symlink, Target: target})
	}
	for _, d := range dirs {
		p, m, hasMode := strings.Cut(d, ":")
		e := ociimage.Entry{Path: p, Type: ociimage.Dir}
		if hasMode {
			mode, err := parseMode(m)
			if err != nil {
				return fmt.Errorf("-dir %q: %w", d, err)
			}
			e.Mode = mode
		}
		img.Entries = append(img.Entries, e)
	}
	return writeAtomic(out, img)
}

// parseMode reads an octal mode; 01777 sets the sticky bit, 04755 setuid.
func parseMode(s string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fmt.Errorf("mode %q: want octal permissions like 0755", s)
	}
	mode := fs.FileMode(n & 0o777)
	if n&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if n&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if n&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode, nil
}

// writeAtomic writes the tarball next to out and renames it into place, so
// a failed run never leaves a truncated image behind.
func writeAtomic(out string, img ociimage.Image) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".mkimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := ociimage.Write(f, img); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}
