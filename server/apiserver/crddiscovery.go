package apiserver

import (
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionslisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
)

// watchCRDGroups keeps the core server's /apis group list in step with the
// apiextensions group and the groups of established CRDs. (Aggregated
// discovery needs no help: both servers share one resource manager.) In
// kube-apiserver the aggregator does this merge; k1s has no aggregator.
func watchCRDGroups(core *genericapiserver.GenericAPIServer, ext *apiextensionsapiserver.CustomResourceDefinitions) {
	gv := apiextensionsv1.SchemeGroupVersion
	core.DiscoveryGroupManager.AddGroup(metav1.APIGroup{
		Name:             gv.Group,
		Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: gv.String(), Version: gv.Version}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version},
	})
	w := &crdGroups{core: core, lister: ext.Informers.Apiextensions().V1().CustomResourceDefinitions().Lister(), known: sets.New[string]()}
	ext.Informers.Apiextensions().V1().CustomResourceDefinitions().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.sync() },
		UpdateFunc: func(any, any) { w.sync() },
		DeleteFunc: func(any) { w.sync() },
	})
}

type crdGroups struct {
	mu     sync.Mutex
	core   *genericapiserver.GenericAPIServer
	lister apiextensionslisters.CustomResourceDefinitionLister
	known  sets.Set[string]
}

// sync recomputes the CRD groups and their served versions.
func (w *crdGroups) sync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	crds, err := w.lister.List(labels.Everything())
	if err != nil {
		return
	}
	versions := map[string]sets.Set[string]{}
	for _, crd := range crds {
		if !established(crd) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			if versions[crd.Spec.Group] == nil {
				versions[crd.Spec.Group] = sets.New[string]()
			}
			versions[crd.Spec.Group].Insert(v.Name)
		}
	}
	for group, vs := range versions {
		list := sets.List(vs)
		sort.Slice(list, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(list[i], list[j]) > 0 })
		g := metav1.APIGroup{Name: group}
		for _, v := range list {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
		}
		g.PreferredVersion = g.Versions[0]
		w.core.DiscoveryGroupManager.AddGroup(g)
		w.known.Insert(group)
	}
	for group := range w.known {
		if _, ok := versions[group]; !ok {
			w.core.DiscoveryGroupManager.RemoveGroup(group)
			w.known.Delete(group)
		}
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
