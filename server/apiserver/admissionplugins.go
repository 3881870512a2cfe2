package apiserver

import (
	k1squota "github.com/k1s/k1s/internal/quota"
	"io"

	"k8s.io/apiserver/pkg/admission"

	"github.com/k1s/k1s/server/admission/clustertrustbundleattest"
	"github.com/k1s/k1s/server/admission/defaultstorageclass"
	"github.com/k1s/k1s/server/admission/defaulttolerationseconds"
	"github.com/k1s/k1s/server/admission/limitranger"
	"github.com/k1s/k1s/server/admission/podsecurity"
	"github.com/k1s/k1s/server/admission/priority"
	"github.com/k1s/k1s/server/admission/pvcresize"
	"github.com/k1s/k1s/server/admission/resourcequota"
	"github.com/k1s/k1s/server/admission/runtimeclass"
	"github.com/k1s/k1s/server/admission/serviceaccount"
	"github.com/k1s/k1s/server/admission/storageobjectinuseprotection"
)

// admissionPlugins returns k1s's plugins in upstream's order: those that run
// before the generic policies and webhooks, and those that run after them.
func (d *dependencies) admissionPlugins(drained <-chan struct{}) (before, after []admissionPlugin) {
	factory := func(build func() (admission.Interface, error)) admission.Factory {
		return func(io.Reader) (admission.Interface, error) { return build() }
	}
	before = []admissionPlugin{
		{limitranger.Name, factory(func() (admission.Interface, error) { return limitranger.New(d.client, d.informers) })},
		{serviceaccount.Name, factory(func() (admission.Interface, error) { return serviceaccount.New(d.client, d.informers) })},
	}
	before = append(before, d.nodeAdmission()...)
	before = append(before,
		// Configured by its entry in the AdmissionConfiguration file
		// (--pod-security-admission-config-file); nil: upstream's defaults.
		admissionPlugin{podsecurity.Name, func(config io.Reader) (admission.Interface, error) {
			return podsecurity.New(config, d.client, d.informers)
		}},
		admissionPlugin{priority.Name, factory(func() (admission.Interface, error) { return priority.New(d.informers, priority.Config{}) })},
		admissionPlugin{defaulttolerationseconds.Name, factory(func() (admission.Interface, error) {
			return defaulttolerationseconds.New(defaulttolerationseconds.Config{
				NotReadyTolerationSeconds:    d.cfg.DefaultNotReadyTolerationSeconds,
				UnreachableTolerationSeconds: d.cfg.DefaultUnreachableTolerationSeconds,
			})
		})},
		admissionPlugin{defaultstorageclass.Name, factory(func() (admission.Interface, error) { return defaultstorageclass.New(d.informers) })},
		admissionPlugin{storageobjectinuseprotection.Name, factory(func() (admission.Interface, error) { return storageobjectinuseprotection.New(), nil })},
		admissionPlugin{pvcresize.Name, factory(func() (admission.Interface, error) { return pvcresize.New(d.informers) })},
		admissionPlugin{runtimeclass.Name, factory(func() (admission.Interface, error) { return runtimeclass.New(d.client, d.informers) })},
		admissionPlugin{clustertrustbundleattest.Name, factory(func() (admission.Interface, error) { return clustertrustbundleattest.New(d.authorizer), nil })},
	)
	after = []admissionPlugin{
		{resourcequota.Name, factory(func() (admission.Interface, error) {
			reg := k1squota.NewRegistry(nil)
			return resourcequota.NewAdmission(d.client, d.informers, k1squota.NewConfiguration(reg), nil, drained)
		})},
	}
	return before, after
}
