// Package testing holds fakes for the serviceaccount package's interfaces.
package testing

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Getter is an in-memory serviceaccount.ServiceAccountTokenGetter. Objects
// are keyed by namespace/name (nodes by name); a missing object yields an
// apierrors NotFound. Err, when set, is returned by every call instead. Safe
// for concurrent use.
type Getter struct {
	mu              sync.Mutex
	serviceAccounts map[string]*corev1.ServiceAccount
	pods            map[string]*corev1.Pod
	secrets         map[string]*corev1.Secret
	nodes           map[string]*corev1.Node
	err             error
}

// NewGetter returns a Getter holding objs, which must be
// *corev1.ServiceAccount, *corev1.Pod, *corev1.Secret or *corev1.Node.
func NewGetter(objs ...any) *Getter {
	g := &Getter{
		serviceAccounts: map[string]*corev1.ServiceAccount{},
		pods:            map[string]*corev1.Pod{},
		secrets:         map[string]*corev1.Secret{},
		nodes:           map[string]*corev1.Node{},
	}
	for _, o := range objs {
		g.Add(o)
	}
	return g
}

// Add stores or replaces obj.
func (g *Getter) Add(obj any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		g.serviceAccounts[o.Namespace+"/"+o.Name] = o
	case *corev1.Pod:
		g.pods[o.Namespace+"/"+o.Name] = o
	case *corev1.Secret:
		g.secrets[o.Namespace+"/"+o.Name] = o
	case *corev1.Node:
		g.nodes[o.Name] = o
	default:
		panic("testing.Getter: unsupported object type")
	}
}

// SetError makes every later call fail with err (nil restores normal lookups).
func (g *Getter) SetError(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err = err
}

func lookup[T any](g *Getter, m map[string]*T, key, resource, name string) (*T, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return nil, g.err
	}
	if o, ok := m[key]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// GetServiceAccount implements serviceaccount.ServiceAccountTokenGetter.
func (g *Getter) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return lookup(g, g.serviceAccounts, namespace+"/"+name, "serviceaccounts", name)
}

// GetPod implements serviceaccount.ServiceAccountTokenGetter.
func (g *Getter) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	return lookup(g, g.pods, namespace+"/"+name, "pods", name)
}

// GetSecret implements serviceaccount.ServiceAccountTokenGetter.
func (g *Getter) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	return lookup(g, g.secrets, namespace+"/"+name, "secrets", name)
}

// GetNode implements serviceaccount.ServiceAccountTokenGetter.
func (g *Getter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return lookup(g, g.nodes, name, "nodes", name)
}
