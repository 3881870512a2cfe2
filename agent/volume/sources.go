package volume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

const (
	// defaultTokenSeconds is a token projection's default lifetime.
	defaultTokenSeconds = 3600
	// maxTokenAge is how long a token is used at most, whatever its lifetime.
	maxTokenAge = 24 * time.Hour
)

// configMapFiles adds the files of a configMap (all keys, or items) to out.
func (m *manager) configMapFiles(ctx context.Context, namespace, name string, items []corev1.KeyToPath, defaultMode int32, defaultUser *int64, optional bool, out map[string]file) error {
	cm, err := m.objects.GetConfigMap(ctx, namespace, name)
	if err == nil && cm == nil {
		err = apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get configmap %q: %w", name, err)
		}
		if !optional {
			return &notFoundError{kind: "configmap", name: name, err: err}
		}
		cm = &corev1.ConfigMap{}
	}
	if len(items) == 0 {
		for k, v := range cm.Data {
			out[k] = file{data: []byte(v), mode: defaultMode, uid: defaultUser}
		}
		for k, v := range cm.BinaryData {
			out[k] = file{data: v, mode: defaultMode, uid: defaultUser}
		}
		return nil
	}
	for _, item := range items {
		var data []byte
		if v, ok := cm.Data[item.Key]; ok {
			data = []byte(v)
		} else if v, ok := cm.BinaryData[item.Key]; ok {
			data = v
		} else if optional {
			continue
		} else {
			return fmt.Errorf("configmap %q has no key %q", name, item.Key)
		}
		out[item.Path] = itemFile(data, item, defaultMode, defaultUser)
	}
	return nil
}

// secretFiles adds the files of a secret (all keys, or items) to out.
func (m *manager) secretFiles(ctx context.Context, namespace, name string, items []corev1.KeyToPath, defaultMode int32, defaultUser *int64, optional bool, out map[string]file) error {
	s, err := m.objects.GetSecret(ctx, namespace, name)
	if err == nil && s == nil {
		err = apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get secret %q: %w", name, err)
		}
		if !optional {
			return &notFoundError{kind: "secret", name: name, err: err}
		}
		s = &corev1.Secret{}
	}
	if len(items) == 0 {
		for k, v := range s.Data {
			out[k] = file{data: v, mode: defaultMode, uid: defaultUser}
		}
		return nil
	}
	for _, item := range items {
		v, ok := s.Data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("secret %q has no key %q", name, item.Key)
		}
		out[item.Path] = itemFile(v, item, defaultMode, defaultUser)
	}
	return nil
}

func itemFile(data []byte, item corev1.KeyToPath, defaultMode int32, defaultUser *int64) file {
	f := file{data: data, mode: defaultMode, uid: defaultUser}
	if item.Mode != nil {
		f.mode = *item.Mode
	}
	if item.User != nil {
		f.uid = item.User
	}
	return f
}

// projectedFiles builds the files of a projected volume. All sources must
// succeed, so that a partial version is never written.
func (m *manager) projectedFiles(ctx context.Context, pod *corev1.Pod, vs *volumeState, src *corev1.ProjectedVolumeSource) (map[string]file, error) {
	defaultMode := modeOr(src.DefaultMode)
	out := map[string]file{}
	var errs []error
	for i, s := range src.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = m.configMapFiles(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, defaultMode, src.DefaultUser, isTrue(s.ConfigMap.Optional), out)
		case s.Secret != nil:
			err = m.secretFiles(ctx, pod.Namespace, s.Secret.Name, s.Secret.Items, defaultMode, src.DefaultUser, isTrue(s.Secret.Optional), out)
		case s.DownwardAPI != nil:
			err = downwardFiles(pod, s.DownwardAPI.Items, defaultMode, m.alloc(), out)
		case s.ServiceAccountToken != nil:
			err = m.tokenFile(ctx, pod, vs, i, s.ServiceAccountToken, defaultMode, src.DefaultUser, out)
		case s.ClusterTrustBundle != nil:
			err = m.trustBundleFile(pod, s.ClusterTrustBundle, defaultMode, src.DefaultUser, out)
		case s.PodCertificate != nil:
			err = m.podCertificateFiles(ctx, pod, vs, i, s.PodCertificate, defaultMode, src.DefaultUser, out)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// tokenState is a token the manager issued for one projection.
type tokenState struct {
	token    string
	audience string
	seconds  int64
	issued   time.Time
	expiry   time.Time
	renewAt  time.Time
}

func newTokenState(token, audience string, seconds int64, issued, expiry time.Time) *tokenState {
	if expiry.IsZero() {
		expiry = issued.Add(time.Duration(seconds) * time.Second)
	}
	renew := issued.Add(expiry.Sub(issued) * 8 / 10)
	if limit := issued.Add(maxTokenAge); limit.Before(renew) {
		renew = limit
	}
	return &tokenState{token: token, audience: audience, seconds: seconds, issued: issued, expiry: expiry, renewAt: renew}
}

// tokenDue says whether a token of the volume must be renewed.
func (vs *volumeState) tokenDue(now time.Time) bool {
	for _, t := range vs.tokens {
		if !now.Before(t.renewAt) {
			return true
		}
	}
	return false
}

// tokenFile adds a projected service account token to out, renewing the
// volume's cached token when it is due.
func (m *manager) tokenFile(ctx context.Context, pod *corev1.Pod, vs *volumeState, index int, tp *corev1.ServiceAccountTokenProjection, defaultMode int32, defaultUser *int64, out map[string]file) error {
	seconds := int64(defaultTokenSeconds)
	if tp.ExpirationSeconds != nil {
		seconds = *tp.ExpirationSeconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	now := m.clock.Now()
	cur := vs.tokens[index]
	if cur == nil || !now.Before(cur.renewAt) || cur.audience != tp.Audience || cur.seconds != seconds {
		if m.token == nil {
			return errors.New("no token requester is configured for service account tokens")
		}
		var auds []string
		if tp.Audience != "" {
			auds = []string{tp.Audience}
		}
		tok, exp, err := m.token(ctx, pod.Namespace, sa, auds, seconds, pod)
		switch {
		case err == nil:
			cur = newTokenState(tok, tp.Audience, seconds, now, exp)
			vs.tokens[index] = cur
		case cur != nil && now.Before(cur.expiry) && cur.audience == tp.Audience:
			klog.FromContext(ctx).Error(err, "Token renewal failed, using the current token until it expires",
				"pod", klog.KObj(pod), "serviceAccount", sa, "expiry", cur.expiry)
		default:
			return fmt.Errorf("request token for service account %q: %w", sa, err)
		}
	}
	uid := defaultUser
	if tp.User != nil {
		uid = tp.User
	}
	mode := defaultMode
	if uid != nil || fsGroup(pod) != nil {
		mode = 0o600
	}
	out[tp.Path] = file{data: []byte(cur.token), mode: mode, uid: uid}
	return nil
}

// checkHostPath refuses paths that climb with ".." and checks the path's
// type, creating a missing directory or file for the ...OrCreate types.
func checkHostPath(src *corev1.HostPathVolumeSource) error {
	for _, part := range strings.Split(src.Path, "/") {
		if part == ".." {
			return fmt.Errorf("invalid hostPath %q: must not contain '..'", src.Path)
		}
	}
	if src.Type == nil || *src.Type == corev1.HostPathUnset {
		return nil
	}
	return checkHostPathType(src.Path, *src.Type)
}
