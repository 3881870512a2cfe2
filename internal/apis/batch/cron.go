package batch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed CronJob schedule.
type Schedule interface {
	// Next returns the first activation time strictly after t, in t's
	// location, or the zero time if the schedule never fires again within
	// the next five years (for example "0 0 30 2 *").
	Next(t time.Time) time.Time
}

// ParseSchedule parses a CronJob schedule: five space-separated fields
// (minute, hour, day of month, month, day of week) or one of the macros
// @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and
// "@every <duration>". A leading "TZ=<zone>" or "CRON_TZ=<zone>" selects the
// zone the fields are read in; validation rejects it for new objects (the
// spec.timeZone field replaces it) but stored objects may still carry it.
//
// Fields accept "*", "?", numbers, names (jan-dec, sun-sat; any case),
// ranges "a-b", steps "*/n", "a-b/n" and "a/n" (a up to the field maximum),
// and comma-separated lists of those. Days of week are 0-6 with 0 = Sunday.
// When both day fields are restricted a day matches if either matches;
// when one of them is "*" or "?" both must match, as in classic cron.
func ParseSchedule(spec string) (Schedule, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, errors.New("empty spec string")
	}
	var loc *time.Location
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		zone, rest, _ := strings.Cut(s, " ")
		_, name, _ := strings.Cut(zone, "=")
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("provided bad location %s: %w", name, err)
		}
		loc = l
		s = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(s, "@") {
		return parseMacro(s, loc)
	}
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), s)
	}
	sched := &specSchedule{loc: loc}
	var err error
	if sched.minute, _, err = parseField(fields[0], minuteBounds); err != nil {
		return nil, err
	}
	if sched.hour, _, err = parseField(fields[1], hourBounds); err != nil {
		return nil, err
	}
	if sched.dom, sched.domStar, err = parseField(fields[2], domBounds); err != nil {
		return nil, err
	}
	if sched.month, _, err = parseField(fields[3], monthBounds); err != nil {
		return nil, err
	}
	if sched.dow, sched.dowStar, err = parseField(fields[4], dowBounds); err != nil {
		return nil, err
	}
	return sched, nil
}

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

func parseMacro(s string, loc *time.Location) (Schedule, error) {
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("failed to parse duration %s: %w", s, err)
		}
		// Intervals run on whole seconds, at least one.
		d = d.Truncate(time.Second)
		if d < time.Second {
			d = time.Second
		}
		return everySchedule(d), nil
	}
	expanded, ok := macros[strings.ToLower(s)]
	if !ok {
		return nil, fmt.Errorf("unrecognized descriptor: %s", s)
	}
	sched, err := ParseSchedule(expanded)
	if err != nil {
		return nil, err
	}
	sched.(*specSchedule).loc = loc
	return sched, nil
}

// everySchedule fires at a fixed interval, aligned to whole seconds.
type everySchedule time.Duration

func (e everySchedule) Next(t time.Time) time.Time {
	return t.Add(time.Duration(e) - time.Duration(t.Nanosecond()))
}

type bounds struct {
	min, max int
	names    map[string]int
}

var (
	minuteBounds = bounds{min: 0, max: 59}
	hourBounds   = bounds{min: 0, max: 23}
	domBounds    = bounds{min: 1, max: 31}
	monthBounds  = bounds{min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dowBounds = bounds{min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

// parseField returns the set of allowed values as a bit set, and whether the
// field was unrestricted ("*" or "?" without a step greater than one).
func parseField(field string, b bounds) (uint64, bool, error) {
	var bits uint64
	star := false
	for _, part := range strings.Split(field, ",") {
		partBits, partStar, err := parseRange(part, b)
		if err != nil {
			return 0, false, err
		}
		bits |= partBits
		star = star || partStar
	}
	return bits, star, nil
}

func parseRange(expr string, b bounds) (uint64, bool, error) {
	rangePart, stepPart, hasStep := strings.Cut(expr, "/")
	if hasStep && strings.Contains(stepPart, "/") {
		return 0, false, fmt.Errorf("too many slashes: %s", expr)
	}
	var lo, hi int
	star := false
	if rangePart == "*" || rangePart == "?" {
		lo, hi, star = b.min, b.max, true
	} else {
		loStr, hiStr, isRange := strings.Cut(rangePart, "-")
		if isRange && strings.Contains(hiStr, "-") {
			return 0, false, fmt.Errorf("too many hyphens: %s", expr)
		}
		var err error
		if lo, err = parseValue(loStr, b); err != nil {
			return 0, false, err
		}
		hi = lo
		if isRange {
			if hi, err = parseValue(hiStr, b); err != nil {
				return 0, false, err
			}
		} else if hasStep {
			// "a/n" means from a up to the maximum, every n.
			hi = b.max
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepPart)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("failed to parse step %q in %s", stepPart, expr)
		}
		if n == 0 {
			return 0, false, fmt.Errorf("step of range should be a positive number: %s", expr)
		}
		step = n
		if step > 1 {
			star = false
		}
	}
	switch {
	case lo < b.min:
		return 0, false, fmt.Errorf("beginning of range (%d) below minimum (%d): %s", lo, b.min, expr)
	case hi > b.max:
		return 0, false, fmt.Errorf("end of range (%d) above maximum (%d): %s", hi, b.max, expr)
	case lo > hi:
		return 0, false, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", lo, hi, expr)
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << uint(v)
	}
	return bits, star, nil
}

func parseValue(s string, b bounds) (int, error) {
	if v, ok := b.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("failed to parse int from %s", s)
	}
	return v, nil
}

// specSchedule is a five-field schedule. Each field is a bit set of allowed
// values; loc, when set, is the zone the fields are read in (otherwise the
// zone of the time passed to Next).
type specSchedule struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
	loc                           *time.Location
}

// searchYears bounds how far ahead Next looks for an activation.
const searchYears = 5

func (s *specSchedule) Next(t time.Time) time.Time {
	orig := t.Location()
	loc := orig
	if s.loc != nil {
		loc = s.loc
	}
	t = t.In(loc)
	// Move to the next whole minute strictly after t. Zone offsets are whole
	// minutes, so seconds can be dropped without touching the wall clock.
	t = t.Add(time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	limit := t.Year() + searchYears
	for t.Year() <= limit {
		switch {
		case s.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case s.hour&(1<<uint(t.Hour())) == 0:
			// Absolute arithmetic so that DST gaps are stepped over.
			t = t.Add(time.Hour - time.Duration(t.Minute())*time.Minute)
		case s.minute&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t.In(orig)
		}
	}
	return time.Time{}
}

func (s *specSchedule) dayMatches(t time.Time) bool {
	domOK := s.dom&(1<<uint(t.Day())) != 0
	dowOK := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}
