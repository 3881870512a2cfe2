package jointoken

import (
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	tok, err := New(ca, "abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	s := tok.String()
	if !strings.HasPrefix(s, "K10") || !strings.HasSuffix(s, "::abcdef.0123456789abcdef") {
		t.Fatalf("token %q", s)
	}
	got, err := Parse(" " + s + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != tok || got.Bearer() != "abcdef.0123456789abcdef" {
		t.Fatalf("parsed %+v, want %+v", got, tok)
	}
	if err := got.Verify(ca); err != nil {
		t.Errorf("Verify of its own CA: %v", err)
	}
	if err := got.Verify(append(ca, 'x')); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("Verify of another CA: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "empty",
		"K10abc::abcdef.0123456789abcdef":       "not a hex SHA-256",
		"K10" + strings.Repeat("a", 64):         `no "::"`,
		"K10" + strings.Repeat("a", 64) + "::x": "not a bootstrap token",
		"server:password":                       "not a bootstrap token",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", in, err, want)
		}
	}
	bare, err := Parse("abcdef.0123456789abcdef")
	if err != nil || bare.CAHash != "" {
		t.Fatalf("bare token: %+v %v", bare, err)
	}
	if err := bare.Verify([]byte("x")); err == nil || !strings.Contains(err.Error(), "--ca-file") {
		t.Errorf("Verify without a hash: %v", err)
	}
}
