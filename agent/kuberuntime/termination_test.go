package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// criLog renders lines in the CRI log format; a line ending in "\\P" is a
// partial line.
func criLog(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		tag := "F"
		if s, ok := strings.CutSuffix(l, "\\P"); ok {
			l, tag = s, "P"
		}
		fmt.Fprintf(&b, "2026-03-01T12:00:00.000000000Z stderr %s %s\n", tag, l)
	}
	return b.String()
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgFile := write("msg", "disk full")
	emptyFile := write("empty", "")
	bigFile := write("big", strings.Repeat("x", 5000))
	log := write("0.log", criLog("starting", "par\\P", "tial", "fatal: no config"))
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	manyLog := write("1.log", criLog(many...))
	longLog := write("2.log", criLog(strings.Repeat("y", 3000)))

	tests := []struct {
		name string
		cs   ContainerStatus
		want string
	}{
		{name: "message file", cs: ContainerStatus{TerminationMessageFile: msgFile, ExitCode: 1}, want: "disk full"},
		{name: "message file wins over the log", cs: ContainerStatus{TerminationMessageFile: msgFile, ExitCode: 1, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: log}, want: "disk full"},
		{name: "message file is capped at 4096 bytes", cs: ContainerStatus{TerminationMessageFile: bigFile}, want: strings.Repeat("x", 4096)},
		{name: "File policy does not read the log", cs: ContainerStatus{TerminationMessageFile: emptyFile, ExitCode: 1, TerminationMessagePolicy: "File", LogPath: log}, want: ""},
		{name: "fallback to the log tail on error", cs: ContainerStatus{TerminationMessageFile: emptyFile, ExitCode: 2, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: log},
			want: "starting\npartial\nfatal: no config\n"},
		{name: "no fallback on success", cs: ContainerStatus{TerminationMessageFile: emptyFile, ExitCode: 0, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: log}, want: ""},
		{name: "missing message file falls back", cs: ContainerStatus{TerminationMessageFile: filepath.Join(dir, "nope"), ExitCode: 1, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: log},
			want: "starting\npartial\nfatal: no config\n"},
		{name: "missing log", cs: ContainerStatus{ExitCode: 1, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: filepath.Join(dir, "nope.log")}, want: ""},
		{name: "last 80 lines", cs: ContainerStatus{ExitCode: 1, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: manyLog},
			want: strings.Join(many[20:], "\n") + "\n"},
		{name: "last 2048 bytes", cs: ContainerStatus{ExitCode: 1, TerminationMessagePolicy: "FallbackToLogsOnError", LogPath: longLog},
			want: strings.Repeat("y", 2047) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminationMessage(&tt.cs); got != tt.want {
				t.Errorf("TerminationMessage = %q, want %q", got, tt.want)
			}
		})
	}
}
