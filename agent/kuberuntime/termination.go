package kuberuntime

import (
	"bytes"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	maxTerminationMessage = 4096
	maxFallbackLogLines   = 80
	maxFallbackLogBytes   = 2048
)

// TerminationMessage reads an exited container's termination message from
// its message file, falling back to the tail of its log when the policy is
// FallbackToLogsOnError and the container failed with no message.
func TerminationMessage(cs *ContainerStatus) string {
	if cs.TerminationMessageFile != "" {
		if f, err := os.Open(cs.TerminationMessageFile); err == nil {
			data, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
			f.Close()
			if len(data) > 0 {
				return string(data)
			}
		}
	}
	if cs.TerminationMessagePolicy == string(corev1.TerminationMessageFallbackToLogsOnError) && cs.ExitCode != 0 && cs.LogPath != "" {
		return logTail(cs.LogPath)
	}
	return ""
}

// logTail returns the last lines of a CRI log file, message text only.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 64*1024 {
		data = data[len(data)-64*1024:]
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > maxFallbackLogLines {
		lines = lines[len(lines)-maxFallbackLogLines:]
	}
	var out strings.Builder
	for _, l := range lines {
		// <time> <stream> <tag> <message>
		parts := bytes.SplitN(l, []byte(" "), 4)
		if len(parts) == 4 {
			out.Write(parts[3])
			if !bytes.Equal(parts[2], []byte("P")) {
				out.WriteByte('\n')
			}
		}
	}
	s := out.String()
	if len(s) > maxFallbackLogBytes {
		s = s[len(s)-maxFallbackLogBytes:]
	}
	return s
}
