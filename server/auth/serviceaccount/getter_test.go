package serviceaccount

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	satesting "github.com/k1s/k1s/server/auth/serviceaccount/testing"
)

func indexer(t *testing.T, objs ...runtime.Object) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// getterCalls runs every lookup for the standard test objects and returns,
// per lookup, the UID found or the error.
func getterCalls(g ServiceAccountTokenGetter) map[string]string {
	ctx := context.Background()
	out := map[string]string{}
	record := func(key, uid string, err error) {
		switch {
		case apierrors.IsNotFound(err):
			out[key] = "notfound"
		case err != nil:
			out[key] = "error: " + err.Error()
		default:
			out[key] = uid
		}
	}
	sa, err := g.GetServiceAccount(ctx, "ns1", "builder")
	record("sa", uidIfFound(err, func() string { return string(sa.UID) }), err)
	pod, err := g.GetPod(ctx, "ns1", "web-0")
	record("pod", uidIfFound(err, func() string { return string(pod.UID) }), err)
	secret, err := g.GetSecret(ctx, "ns1", "bound-secret")
	record("secret", uidIfFound(err, func() string { return string(secret.UID) }), err)
	node, err := g.GetNode(ctx, "node-a")
	record("node", uidIfFound(err, func() string { return string(node.UID) }), err)
	_, err = g.GetPod(ctx, "other-ns", "web-0")
	record("pod-other-ns", "", err)
	return out
}

func uidIfFound(err error, uid func() string) string {
	if err != nil {
		return ""
	}
	return uid()
}

func TestGetters(t *testing.T) {
	all := map[string]string{"sa": "sa-uid", "pod": "pod-uid", "secret": "secret-uid", "node": "node-uid", "pod-other-ns": "notfound"}
	none := map[string]string{"sa": "notfound", "pod": "notfound", "secret": "notfound", "node": "notfound", "pod-other-ns": "notfound"}
	objs := []runtime.Object{testSA(), testPod(), testSecret(), testNode()}

	tests := []struct {
		name   string
		getter func(t *testing.T) ServiceAccountTokenGetter
		want   map[string]string
	}{
		{
			name: "listers with objects",
			getter: func(t *testing.T) ServiceAccountTokenGetter {
				return NewListerGetter(
					corev1listers.NewServiceAccountLister(indexer(t, testSA())),
					corev1listers.NewPodLister(indexer(t, testPod())),
					corev1listers.NewSecretLister(indexer(t, testSecret())),
					corev1listers.NewNodeLister(indexer(t, testNode())))
			},
			want: all,
		},
		{
			name: "empty listers",
			getter: func(t *testing.T) ServiceAccountTokenGetter {
				return NewListerGetter(
					corev1listers.NewServiceAccountLister(indexer(t)),
					corev1listers.NewPodLister(indexer(t)),
					corev1listers.NewSecretLister(indexer(t)),
					corev1listers.NewNodeLister(indexer(t)))
			},
			want: none,
		},
		{
			name:   "client",
			getter: func(*testing.T) ServiceAccountTokenGetter { return NewClientGetter(fake.NewClientset(objs...)) },
			want:   all,
		},
		{
			name: "fallback used on not found",
			getter: func(*testing.T) ServiceAccountTokenGetter {
				return WithFallback(satesting.NewGetter(), NewClientGetter(fake.NewClientset(objs...)))
			},
			want: all,
		},
		{
			name: "fallback not used on other errors",
			getter: func(*testing.T) ServiceAccountTokenGetter {
				primary := satesting.NewGetter()
				primary.SetError(errors.New("boom"))
				return WithFallback(primary, NewClientGetter(fake.NewClientset(objs...)))
			},
			want: map[string]string{"sa": "error: boom", "pod": "error: boom", "secret": "error: boom", "node": "error: boom", "pod-other-ns": "error: boom"},
		},
		{
			name: "primary wins when it has the object",
			getter: func(*testing.T) ServiceAccountTokenGetter {
				return WithFallback(satesting.NewGetter(withUID(testSA(), "cached"), testPod(), testSecret(), testNode()), satesting.NewGetter())
			},
			want: map[string]string{"sa": "cached", "pod": "pod-uid", "secret": "secret-uid", "node": "node-uid", "pod-other-ns": "notfound"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := getterCalls(tc.getter(t))
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s: got %q, want %q", k, got[k], want)
				}
			}
		})
	}
}
