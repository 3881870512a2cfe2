package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// object is a pointer to an API type.
type object[T any] interface {
	*T
	runtime.Object
	GetNamespace() string
	GetName() string
}

// Fetch gets kind's namespace/name with get and keeps the answer: an
// object is kept, a NotFound removes it, and while the apiservers are
// unreachable the kept copy is returned instead of the error (kind is
// ConfigMaps or Secrets). Once a list found them unreachable, the kept
// copy is returned without asking (each question would wait for a
// connection that does not come) until a list succeeds again.
func Fetch[T any, P object[T]](ctx context.Context, s *Store, kind, namespace, name string, get func() (P, error)) (P, error) {
	if s.offline.Load() {
		kept := P(new(T))
		if ok, err := s.Get(kind, namespace, name, kept); err == nil && ok {
			return kept, nil
		}
	}
	obj, err := get()
	switch {
	case err == nil:
		if _, perr := s.Put(kind, namespace, name, Trim(obj)); perr != nil {
			klog.FromContext(ctx).Error(perr, "Cannot keep the object in the checkpoint", "kind", kind, "object", klog.KRef(namespace, name))
		}
		return obj, nil
	case apierrors.IsNotFound(err):
		if derr := s.Delete(kind, namespace, name); derr != nil {
			klog.FromContext(ctx).Error(derr, "Cannot remove the object from the checkpoint", "kind", kind, "object", klog.KRef(namespace, name))
		}
		return nil, err
	case !Unreachable(err):
		return nil, err
	}
	kept := P(new(T))
	ok, gerr := s.Get(kind, namespace, name, kept)
	if gerr != nil || !ok {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Apiservers unreachable: using the checkpoint's copy", "kind", kind, "object", klog.KRef(namespace, name), "err", err)
	return kept, nil
}

// token is a kept projected service-account token.
type token struct {
	Token  string    `json:"token"`
	Expiry time.Time `json:"expiry"`
}

// tokenName is the checkpoint name of pod's token for one projection.
func tokenName(pod *corev1.Pod, serviceAccount string, audiences []string, seconds int64) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%s", serviceAccount, seconds, strings.Join(audiences, "\x00"))
	return fmt.Sprintf("%s.%x", pod.UID, h.Sum64())
}

// TokenFunc issues a service-account token bound to a pod (the shape of
// agent/volume's TokenRequester).
type TokenFunc func(ctx context.Context, namespace, serviceAccount string, audiences []string, expirationSeconds int64, pod *corev1.Pod) (string, time.Time, error)

// Tokens wraps request: issued tokens are kept, and while the apiservers
// are unreachable the kept token is returned as long as it has not
// expired (a pod restarted while cut off gets its volume back); as Fetch,
// without asking once a list found them unreachable.
func (s *Store) Tokens(request TokenFunc) TokenFunc {
	return func(ctx context.Context, ns, sa string, audiences []string, seconds int64, pod *corev1.Pod) (string, time.Time, error) {
		name := tokenName(pod, sa, audiences, seconds)
		if s.offline.Load() {
			var kept token
			if ok, err := s.Get(Tokens, ns, name, &kept); err == nil && ok && time.Now().Before(kept.Expiry) {
				return kept.Token, kept.Expiry, nil
			}
		}
		tok, exp, err := request(ctx, ns, sa, audiences, seconds, pod)
		if err == nil {
			if _, perr := s.Put(Tokens, ns, name, token{Token: tok, Expiry: exp}); perr != nil {
				klog.FromContext(ctx).Error(perr, "Cannot keep the token in the checkpoint", "pod", klog.KObj(pod))
			}
			return tok, exp, nil
		}
		if !Unreachable(err) {
			return "", time.Time{}, err
		}
		var kept token
		if ok, gerr := s.Get(Tokens, ns, name, &kept); gerr != nil || !ok || !time.Now().Before(kept.Expiry) {
			return "", time.Time{}, err
		}
		return kept.Token, kept.Expiry, nil
	}
}

// Pods returns the pods kept in the checkpoint.
func (s *Store) Pods() ([]*corev1.Pod, error) {
	raw, err := s.List(Pods)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(raw))
	for _, data := range raw {
		p := &corev1.Pod{}
		if err := json.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("checkpoint pod: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Node returns the kept Node named name.
func (s *Store) Node(name string) (*corev1.Node, bool) {
	n := &corev1.Node{}
	ok, err := s.Get(Nodes, "", name, n)
	return n, ok && err == nil
}

// PruneUnreferenced removes the ConfigMaps, Secrets and tokens no kept
// pod references any more.
func (s *Store) PruneUnreferenced() error {
	pods, err := s.Pods()
	if err != nil {
		return err
	}
	cms, secrets, uids := sets.New[string](), sets.New[string](), sets.New[string]()
	for _, p := range pods {
		uids.Insert(string(p.UID))
		c, sc := References(p)
		for _, n := range c {
			cms.Insert(p.Namespace + "/" + n)
		}
		for _, n := range sc {
			secrets.Insert(p.Namespace + "/" + n)
		}
	}
	var errs []error
	for _, k := range []struct {
		kind string
		keep func(ns, name string) bool
	}{
		{ConfigMaps, func(ns, name string) bool { return cms.Has(ns + "/" + name) }},
		{Secrets, func(ns, name string) bool { return secrets.Has(ns + "/" + name) }},
		{Tokens, func(_, name string) bool { uid, _, _ := strings.Cut(name, "."); return uids.Has(uid) }},
	} {
		for _, nn := range s.Names(k.kind) {
			if !k.keep(nn[0], nn[1]) {
				if err := s.Delete(k.kind, nn[0], nn[1]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("prune checkpoint: %v", errs)
	}
	return nil
}

// References returns the names of the ConfigMaps and Secrets pod mounts
// or reads its environment from (volumes, projected sources, env and
// envFrom of every container), sorted.
func References(pod *corev1.Pod) (configMaps, secrets []string) {
	cms, scs := sets.New[string](), sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			cms.Insert(v.ConfigMap.Name)
		}
		if v.Secret != nil {
			scs.Insert(v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					cms.Insert(src.ConfigMap.Name)
				}
				if src.Secret != nil {
					scs.Insert(src.Secret.Name)
				}
			}
		}
	}
	visit := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					cms.Insert(e.ConfigMapRef.Name)
				}
				if e.SecretRef != nil {
					scs.Insert(e.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if e.ValueFrom.ConfigMapKeyRef != nil {
					cms.Insert(e.ValueFrom.ConfigMapKeyRef.Name)
				}
				if e.ValueFrom.SecretKeyRef != nil {
					scs.Insert(e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
	visit(pod.Spec.InitContainers)
	visit(pod.Spec.Containers)
	for _, ec := range pod.Spec.EphemeralContainers {
		visit([]corev1.Container{corev1.Container(ec.EphemeralContainerCommon)})
	}
	configMaps, secrets = sets.List(cms), sets.List(scs)
	sort.Strings(configMaps)
	sort.Strings(secrets)
	return configMaps, secrets
}
