package batch

import (
	"testing"
	"time"
)

func TestParseScheduleErrors(t *testing.T) {
	bad := []string{
		"",
		"* * * *",
		"* * * * * *",
		"60 * * * *",
		"* 24 * * *",
		"* * 0 * *",
		"* * 32 * *",
		"* * * 13 *",
		"* * * * 7",
		"5-1 * * * *",
		"*/0 * * * *",
		"1-2-3 * * * *",
		"1/2/3 * * * *",
		"a * * * *",
		"-1 * * * *",
		"* * * foo *",
		"@fortnightly",
		"@every fast",
		"TZ=Not/AZone * * * * *",
	}
	for _, s := range bad {
		if _, err := ParseSchedule(s); err == nil {
			t.Errorf("ParseSchedule(%q) succeeded, want error", s)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleNext(t *testing.T) {
	tests := []struct {
		spec, from, want string
	}{
		{"* * * * *", "2026-03-01T10:00:00Z", "2026-03-01T10:01:00Z"},
		{"* * * * *", "2026-03-01T10:00:59.5Z", "2026-03-01T10:01:00Z"},
		{"*/15 * * * *", "2026-03-01T10:07:00Z", "2026-03-01T10:15:00Z"},
		{"5/20 * * * *", "2026-03-01T10:26:00Z", "2026-03-01T10:45:00Z"},
		{"0 9-17/4 * * *", "2026-03-01T13:00:00Z", "2026-03-01T17:00:00Z"},
		{"30 2 * * *", "2026-03-01T02:30:00Z", "2026-03-02T02:30:00Z"},
		{"0 0 1,15 * *", "2026-03-02T00:00:00Z", "2026-03-15T00:00:00Z"},
		{"0 0 * * MON", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"}, // 2026-03-01 is a Sunday
		{"0 0 * * sun", "2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z"},
		{"0 12 * JAN-mar *", "2026-03-31T12:00:00Z", "2027-01-01T12:00:00Z"},
		// Both day fields restricted: either may match (13th or a Friday).
		{"0 0 13 * 5", "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z"},
		{"0 0 13 * 5", "2026-03-12T00:00:00Z", "2026-03-13T00:00:00Z"},
		// Day of week is "*": only the day of month counts.
		{"0 0 13 * *", "2026-03-01T00:00:00Z", "2026-03-13T00:00:00Z"},
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"@hourly", "2026-03-01T10:20:00Z", "2026-03-01T11:00:00Z"},
		{"@daily", "2026-03-01T10:20:00Z", "2026-03-02T00:00:00Z"},
		{"@midnight", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"@weekly", "2026-03-02T00:00:00Z", "2026-03-08T00:00:00Z"},
		{"@monthly", "2026-03-02T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"@yearly", "2026-03-02T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"@annually", "2026-03-02T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"@every 90s", "2026-03-02T00:00:00.25Z", "2026-03-02T00:01:30Z"},
		{"CRON_TZ=America/New_York 0 9 * * *", "2026-01-10T15:00:00Z", "2026-01-11T14:00:00Z"},
		{"TZ=Asia/Tokyo @daily", "2026-01-10T16:00:00Z", "2026-01-11T15:00:00Z"},
	}
	for _, tc := range tests {
		sched, err := ParseSchedule(tc.spec)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tc.spec, err)
			continue
		}
		got := sched.Next(mustTime(t, tc.from))
		if want := mustTime(t, tc.want); !got.Equal(want) {
			t.Errorf("%q.Next(%s) = %s, want %s", tc.spec, tc.from, got.UTC().Format(time.RFC3339), tc.want)
		}
	}
}

func TestScheduleNextNever(t *testing.T) {
	sched, err := ParseSchedule("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if got := sched.Next(mustTime(t, "2026-01-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("Next = %v, want zero time", got)
	}
}

func TestScheduleNextKeepsLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	sched, err := ParseSchedule("30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-03-08 is the spring-forward day in New York: 02:30 does not exist.
	from := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	got := sched.Next(from)
	if got.Location() != ny {
		t.Errorf("location = %v, want %v", got.Location(), ny)
	}
	if want := time.Date(2026, 3, 9, 2, 30, 0, 0, ny); !got.Equal(want) {
		t.Errorf("Next over DST gap = %v, want %v", got, want)
	}
	// Hourly jobs step over the missing hour.
	hourly, _ := ParseSchedule("0 * * * *")
	got = hourly.Next(time.Date(2026, 3, 8, 1, 30, 0, 0, ny))
	if want := time.Date(2026, 3, 8, 3, 0, 0, 0, ny); !got.Equal(want) {
		t.Errorf("hourly over DST gap = %v, want %v", got, want)
	}
}
