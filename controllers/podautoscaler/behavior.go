package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Without a behavior, one sync may at most double the replicas, or reach
// 4 from fewer (upstream's fixed scale-up limit).
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// recommendation is a replica count the metrics asked for at a time.
type recommendation struct {
	replicas int32
	at       time.Time
}

// scaleEvent is a change of replicas the controller made.
type scaleEvent struct {
	change   int32 // absolute
	at       time.Time
	outdated bool
}

// hpaState is what the controller remembers of one HPA between syncs.
type hpaState struct {
	recommendations []recommendation
	ups, downs      []scaleEvent
}

// record stores r, reusing the slot of a sample old enough (stale) to be
// of no further use.
func (s *hpaState) record(r recommendation, stale func(recommendation) bool) {
	for i := range s.recommendations {
		if stale(s.recommendations[i]) {
			s.recommendations[i] = r
			return
		}
	}
	s.recommendations = append(s.recommendations, r)
}

// stabilizeDown is the highest recommendation within window (the
// default rule when the HPA has no behavior); desired is recorded.
func (s *hpaState) stabilizeDown(desired int32, window time.Duration, now time.Time) int32 {
	cutoff := now.Add(-window)
	out := desired
	for _, r := range s.recommendations {
		if !r.at.Before(cutoff) && r.replicas > out {
			out = r.replicas
		}
	}
	s.record(recommendation{desired, now}, func(r recommendation) bool { return r.at.Before(cutoff) })
	return out
}

// stabilize applies a behavior's two windows: the count never goes above
// the lowest recommendation of the scale-up window nor below the highest
// of the scale-down window, and stays at current in between. desired is
// recorded. It returns the count, and the reason and message of the
// AbleToScale condition when the count differs from desired.
func (s *hpaState) stabilize(current, desired int32, upWindow, downWindow time.Duration, now time.Time) (int32, string, string) {
	upCutoff, downCutoff := now.Add(-upWindow), now.Add(-downWindow)
	up, down := desired, desired
	for _, r := range s.recommendations {
		if r.at.After(upCutoff) {
			up = min(up, r.replicas)
		}
		if r.at.After(downCutoff) {
			down = max(down, r.replicas)
		}
	}
	out := current
	if out < up {
		out = up
	}
	if out > down {
		out = down
	}
	s.record(recommendation{desired, now}, func(r recommendation) bool {
		return r.at.Before(upCutoff) && r.at.Before(downCutoff)
	})
	if desired >= current {
		return out, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return out, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// limitWithoutBehavior bounds desired by min/maxReplicas and the fixed
// scale-up limit; it returns the ScalingLimited reason and message.
func limitWithoutBehavior(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upLimit := int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	maxAllowed, reason, msg := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > upLimit {
		maxAllowed, reason, msg = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > maxAllowed:
		return maxAllowed, reason, msg
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// limitWithBehavior bounds desired by min/maxReplicas and the rate the
// behavior's policies allow given the recent scale events.
func (s *hpaState) limitWithBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior, current, desired, minReplicas, maxReplicas int32, now time.Time) (int32, string, string) {
	switch {
	case desired > current:
		limit := max(scaleUpLimit(current, s.ups, s.downs, b.ScaleUp, now), current)
		maxAllowed, reason, msg := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if maxReplicas > limit {
			maxAllowed, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > maxAllowed {
			return maxAllowed, reason, msg
		}
	case desired < current:
		limit := min(scaleDownLimit(current, s.ups, s.downs, b.ScaleDown, now), current)
		minAllowed, reason, msg := minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if minReplicas < limit {
			minAllowed, reason, msg = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < minAllowed {
			return minAllowed, reason, msg
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

func selectPolicy(r *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if r == nil || r.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *r.SelectPolicy
}

// changedWithin sums the changes of events within period before now.
func changedWithin(events []scaleEvent, periodSeconds int32, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the scale-up policies allow now:
// each policy counts from the replicas at the start of its period; Max
// takes the most permissive policy, Min the least, Disabled allows none.
func scaleUpLimit(current int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(r)
	if sel == autoscalingv2.DisabledPolicySelect || r == nil {
		return current
	}
	var out int32 = math.MinInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		out = math.MaxInt32
	}
	for _, p := range r.Policies {
		start := current - changedWithin(ups, p.PeriodSeconds, now) + changedWithin(downs, p.PeriodSeconds, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if sel == autoscalingv2.MinChangePolicySelect {
			out = min(out, proposed)
		} else {
			out = max(out, proposed)
		}
	}
	return out
}

// scaleDownLimit is the fewest replicas the scale-down policies allow now.
func scaleDownLimit(current int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(r)
	if sel == autoscalingv2.DisabledPolicySelect || r == nil {
		return current
	}
	var out int32 = math.MaxInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		out = math.MinInt32
	}
	for _, p := range r.Policies {
		start := current - changedWithin(ups, p.PeriodSeconds, now) + changedWithin(downs, p.PeriodSeconds, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if sel == autoscalingv2.MinChangePolicySelect {
			out = max(out, proposed)
		} else {
			out = min(out, proposed)
		}
	}
	return out
}

// recordScale remembers a change from prev to next for the policies of b,
// reusing the slot of an event older than the longest policy period.
func (s *hpaState) recordScale(b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	if b == nil {
		return
	}
	events, rules, change := &s.downs, b.ScaleDown, prev-next
	if next > prev {
		events, rules, change = &s.ups, b.ScaleUp, next-prev
	}
	var longest int32
	if rules != nil {
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	slot := -1
	for i := range *events {
		if (*events)[i].at.Before(cutoff) {
			(*events)[i].outdated = true
		}
		if (*events)[i].outdated {
			slot = i
		}
	}
	e := scaleEvent{change: change, at: now}
	if slot >= 0 {
		(*events)[slot] = e
	} else {
		*events = append(*events, e)
	}
}
