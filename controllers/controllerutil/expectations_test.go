package controllerutil

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestControllerExpectations(t *testing.T) {
	const key = "ns/rs"
	tests := []struct {
		name          string
		do            func(e *ControllerExpectations, clk *clocktesting.FakeClock)
		wantSatisfied bool
		wantAdd       int64
		wantDel       int64
		wantRecord    bool
	}{
		{name: "no record", do: func(*ControllerExpectations, *clocktesting.FakeClock) {}, wantSatisfied: true},
		{
			name: "creations outstanding",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 2)
				e.CreationObserved(key)
			},
			wantAdd:    1,
			wantRecord: true,
		},
		{
			name: "creations all observed",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 2)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			wantSatisfied: true,
			wantRecord:    true,
		},
		{
			name: "more observed than expected stays satisfied",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(key, 1)
				e.DeletionObserved(key)
				e.DeletionObserved(key)
			},
			wantSatisfied: true,
			wantDel:       -1,
			wantRecord:    true,
		},
		{
			name: "deletions outstanding until the TTL",
			do: func(e *ControllerExpectations, clk *clocktesting.FakeClock) {
				e.ExpectDeletions(key, 3)
				clk.Step(ExpectationsTimeout)
			},
			wantDel:    3,
			wantRecord: true,
		},
		{
			name: "expired after the TTL",
			do: func(e *ControllerExpectations, clk *clocktesting.FakeClock) {
				e.ExpectDeletions(key, 3)
				clk.Step(ExpectationsTimeout + time.Second)
			},
			wantSatisfied: true,
			wantDel:       3,
			wantRecord:    true,
		},
		{
			name: "set replaces the record and its time",
			do: func(e *ControllerExpectations, clk *clocktesting.FakeClock) {
				e.ExpectCreations(key, 5)
				clk.Step(ExpectationsTimeout)
				e.SetExpectations(key, 1, 1)
				clk.Step(time.Minute)
			},
			wantAdd:    1,
			wantDel:    1,
			wantRecord: true,
		},
		{
			name: "raise and lower",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 1)
				e.RaiseExpectations(key, 2, 1)
				e.LowerExpectations(key, 1, 0)
			},
			wantAdd:    2,
			wantDel:    1,
			wantRecord: true,
		},
		{
			name: "observations without a record are ignored",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.CreationObserved(key)
				e.RaiseExpectations(key, 1, 1)
			},
			wantSatisfied: true,
		},
		{
			name: "deleted",
			do: func(e *ControllerExpectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 4)
				e.DeleteExpectations(key)
			},
			wantSatisfied: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			e := NewControllerExpectations(clk)
			tc.do(e, clk)
			if got := e.SatisfiedExpectations(key); got != tc.wantSatisfied {
				t.Errorf("SatisfiedExpectations = %v, want %v", got, tc.wantSatisfied)
			}
			add, del, ok := e.GetExpectations(key)
			if add != tc.wantAdd || del != tc.wantDel || ok != tc.wantRecord {
				t.Errorf("GetExpectations = (%d, %d, %v), want (%d, %d, %v)", add, del, ok, tc.wantAdd, tc.wantDel, tc.wantRecord)
			}
			if !e.SatisfiedExpectations("other/key") {
				t.Error("another key is not satisfied")
			}
		})
	}
}

func TestUIDTrackingExpectations(t *testing.T) {
	const key = "ns/rs"
	e := NewUIDTrackingExpectations(NewControllerExpectations(nil))
	e.ExpectDeletions(key, []string{"ns/a", "ns/b"})
	if e.SatisfiedExpectations(key) {
		t.Fatal("satisfied before any deletion")
	}
	// The update setting deletionTimestamp and the delete event both
	// report ns/a: counted once.
	e.DeletionObserved(key, "ns/a")
	e.DeletionObserved(key, "ns/a")
	e.DeletionObserved(key, "ns/unrelated")
	if _, del, _ := e.GetExpectations(key); del != 1 {
		t.Fatalf("outstanding deletions = %d, want 1", del)
	}
	if got := e.ExpectedDeletions(key); !got.Equal(sets.New("ns/b")) {
		t.Errorf("ExpectedDeletions = %v, want [ns/b]", sets.List(got))
	}
	e.DeletionObserved(key, "ns/b")
	if !e.SatisfiedExpectations(key) {
		t.Error("not satisfied after both deletions")
	}
	e.ExpectDeletions(key, []string{"ns/c"})
	e.DeleteExpectations(key)
	if _, _, ok := e.GetExpectations(key); ok || e.ExpectedDeletions(key).Len() != 0 {
		t.Error("DeleteExpectations left a record")
	}
	// Creations go through the embedded expectations.
	e.ExpectCreations(key, 1)
	if e.SatisfiedExpectations(key) {
		t.Error("creation expectation ignored")
	}
}
