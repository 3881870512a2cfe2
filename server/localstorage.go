package server

import "github.com/k1s/k1s/agent/localpath"

// LocalStorageClassName is the default StorageClass, k3s's.
const LocalStorageClassName = "local-path"

// localStorageVars are the template values of the packaged
// manifests/local-storage.yaml, the default StorageClass local-path served
// by every node's built-in provisioner (k3s's rancher.io/local-path).
// Like every packaged manifest it is written and applied at each start
// (a local-storage.yaml.skip keeps the operator's own); --disable
// local-storage writes none, removes the class, and runs no provisioner
// on the server's node.
func (s *Server) localStorageVars() map[string]string {
	return map[string]string{
		"LOCAL_PATH_PROVISIONER":     localpath.ProvisionerName,
		"DEFAULT_LOCAL_STORAGE_PATH": s.cfg.DefaultLocalStoragePath,
	}
}
