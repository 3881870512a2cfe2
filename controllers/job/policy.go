package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// policyMatch is the verdict of spec.podFailurePolicy on a failed pod.
type policyMatch struct {
	// action is the matching rule's action, nil when no rule matched.
	action *batchv1.PodFailurePolicyAction
	// countFailed is false when the failure does not count towards the
	// backoff limits (Ignore).
	countFailed bool
	// failJobMessage is set for FailJob: the Failed condition's message.
	failJobMessage string
}

// matchPodFailurePolicy applies the first rule of policy that matches the
// failed pod. Without a policy, or when no rule matches, the failure
// counts.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) policyMatch {
	if policy == nil {
		return policyMatch{countFailed: true}
	}
	for i, rule := range policy.Rules {
		var what string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			what = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v", cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode)
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(&pod.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			what = fmt.Sprintf("Pod %s/%s has condition %v", pod.Namespace, pod.Name, cond.Type)
		default:
			continue
		}
		action := rule.Action
		m := policyMatch{action: &action, countFailed: action != batchv1.PodFailurePolicyActionIgnore}
		switch action {
		case batchv1.PodFailurePolicyActionFailJob:
			m.failJobMessage = fmt.Sprintf("%s matching %v rule at index %d", what, action, i)
		case batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
		default:
			// An action this controller does not know: the rule is
			// skipped, as upstream's.
			continue
		}
		return m
	}
	return policyMatch{countFailed: true}
}

// matchExitCodes returns the first terminated container (regular, then
// init) with a non-zero exit code that req matches.
func matchExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
				(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

// matchPodConditions returns the first pod condition one of the patterns
// matches.
func matchPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		for _, p := range patterns {
			if st.Conditions[i].Type == p.Type && st.Conditions[i].Status == p.Status {
				return &st.Conditions[i]
			}
		}
	}
	return nil
}

// matchSuccessPolicy reports whether the succeeded indexes meet a rule of
// the Job's successPolicy, and the SuccessCriteriaMet message.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int32, succeeded indexSet) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		met := false
		if rule.SucceededIndexes != nil {
			required := parseIndexSet(*rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue
			}
			have := required.overlap(succeeded)
			met = have == required.total() || (rule.SucceededCount != nil && have >= int(*rule.SucceededCount))
		} else if rule.SucceededCount != nil {
			met = succeeded.total() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
