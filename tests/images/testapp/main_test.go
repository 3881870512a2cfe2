package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestHealthFailAndRecover(t *testing.T) {
	s := &server{start: time.Now()}
	h := s.routes()
	steps := []struct {
		path     string
		wantCode int
	}{
		{"/healthz", 200},
		{"/fail", 200},
		{"/healthz", 500},
		{"/recover", 200},
		{"/healthz", 200},
		{"/nope", 404},
	}
	for _, st := range steps {
		if code, _ := get(t, h, st.path); code != st.wantCode {
			t.Errorf("GET %s = %d, want %d", st.path, code, st.wantCode)
		}
	}
}

func TestReadyAfter(t *testing.T) {
	s := &server{start: time.Now(), opts: options{readyAfter: 3600}}
	if code, _ := get(t, s.routes(), "/ready"); code != 503 {
		t.Errorf("/ready before ready-after = %d, want 503", code)
	}
	s.start = time.Now().Add(-2 * time.Hour)
	if code, _ := get(t, s.routes(), "/ready"); code != 200 {
		t.Errorf("/ready after ready-after = %d, want 200", code)
	}
}

func TestEnvAndExit(t *testing.T) {
	t.Setenv("TESTAPP_PROBE", "yes")
	exited := -1
	s := &server{start: time.Now(), exit: func(c int) { exited = c }}
	if _, body := get(t, s.routes(), "/env"); !strings.Contains(body, "TESTAPP_PROBE=yes\n") {
		t.Errorf("/env lacks the variable: %q", body)
	}
	get(t, s.routes(), "/exit?code=7")
	if exited != 7 {
		t.Errorf("exit code = %d, want 7", exited)
	}
}

func TestOptionsFromEnvAndFlags(t *testing.T) {
	t.Setenv("EXIT_AFTER", "1.5")
	t.Setenv("EXIT_CODE", "3")
	t.Setenv("FAIL_HEALTH", "1")
	t.Setenv("STDOUT", `a\nb`)
	o, err := parseOptions([]string{"-exit-code", "4", "-port", "9090"})
	if err != nil {
		t.Fatal(err)
	}
	if o.exitAfter != 1.5 || o.exitCode != 4 || !o.failHealth || o.port != 9090 {
		t.Errorf("options = %+v", o)
	}
	if got := splitLines(o.stdout); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("stdout lines = %q", got)
	}
}
