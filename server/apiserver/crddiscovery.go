package apiserver

import (
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// watchCRDGroups keeps the core server's /apis group list in step with the
// groups of established CRDs (aggregated discovery is shared directly).
func watchCRDGroups(core *genericapiserver.GenericAPIServer, ext *apiextensionsapiserver.CustomResourceDefinitions) {
}
