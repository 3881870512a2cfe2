package apiserver

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/k1s/k1s/server/registry"
	"github.com/k1s/k1s/server/scheme"
)

// storageSet collects the REST storages of every group version.
type storageSet struct {
	byGV   map[schema.GroupVersion]map[string]rest.Storage
	stores map[schema.GroupResource]*registry.Store
}

func (s *storageSet) add(gv schema.GroupVersion, path string, st rest.Storage) {
	if s.byGV[gv] == nil {
		s.byGV[gv] = map[string]rest.Storage{}
	}
	s.byGV[gv][path] = st
}

// installAPIs builds every store and installs the API groups on the server.
func (d *dependencies) installAPIs(server *genericapiserver.GenericAPIServer, opts generic.RESTOptionsGetter) error {
	set := &storageSet{
		byGV:   map[schema.GroupVersion]map[string]rest.Storage{},
		stores: map[schema.GroupResource]*registry.Store{},
	}
	for _, r := range resources() {
		d.attachValidation(r)
		st, err := registry.NewStore(r, opts)
		if err != nil {
			return err
		}
		set.stores[r.GroupResource()] = st
		for _, gv := range append([]schema.GroupVersion{r.GVR.GroupVersion()}, r.AlsoServedAs...) {
			set.add(gv, r.GVR.Resource, st)
			if st.StatusStore != nil {
				set.add(gv, r.GVR.Resource+"/status", registry.NewStatusREST(st.StatusStore))
			}
		}
	}
	if err := d.addSubresources(set); err != nil {
		return err
	}
	d.addGroupSubresources(set)
	d.serviceAllocators.Install(set.stores[schema.GroupResource{Resource: "services"}].Store)

	// The legacy core group is served under /api.
	core := schema.GroupVersion{Version: "v1"}
	legacy := genericapiserver.NewDefaultAPIGroupInfo("", scheme.Scheme, scheme.ParameterCodec, scheme.Codecs)
	legacy.VersionedResourcesStorageMap["v1"] = set.byGV[core]
	if err := server.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &legacy); err != nil {
		return fmt.Errorf("install core API: %w", err)
	}

	groups := map[string]*genericapiserver.APIGroupInfo{}
	var names []string
	for gv, storages := range set.byGV {
		if gv.Group == "" {
			continue
		}
		info, ok := groups[gv.Group]
		if !ok {
			gi := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, scheme.Scheme, scheme.ParameterCodec, scheme.Codecs)
			info = &gi
			groups[gv.Group] = info
			names = append(names, gv.Group)
		}
		info.VersionedResourcesStorageMap[gv.Version] = storages
	}
	sort.Strings(names)
	var infos []*genericapiserver.APIGroupInfo
	for _, n := range names {
		infos = append(infos, groups[n])
	}
	if err := server.InstallAPIGroups(infos...); err != nil {
		return fmt.Errorf("install API groups: %w", err)
	}
	return nil
}
