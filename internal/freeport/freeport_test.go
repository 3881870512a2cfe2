package freeport

import "testing"

func TestGetNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if p <= 0 || seen[p] {
			t.Fatalf("port %d handed out twice (or invalid)", p)
		}
		seen[p] = true
	}
}
