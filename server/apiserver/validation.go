package apiserver

import "github.com/k1s/k1s/server/registry"

// attachValidation sets the validation hooks of r from the server/apis packages.
func (d *dependencies) attachValidation(r *registry.Resource) {}
