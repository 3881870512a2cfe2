package podsecurity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "PodSecurity"

// Plugin is the PodSecurity admission plugin. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	delegate *psadmission.Admission
}

var (
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

var (
	recorderOnce sync.Once
	recorder     *metrics.PrometheusRecorder
)

// metricsRecorder is the one recorder of the process, registered in the
// apiserver's metrics registry (pod_security_evaluations_total ...).
func metricsRecorder() metrics.Recorder {
	recorderOnce.Do(func() {
		recorder = metrics.NewPrometheusRecorder(psapi.GetAPIVersion())
		recorder.MustRegister(legacyregistry.MustRegister)
	})
	return recorder
}

// New returns the plugin configured by config, a PodSecurityConfiguration
// (nil: upstream's defaults, every level privileged, no exemptions),
// reading namespaces and pods from the factory's informers (registering
// them, so the caller starts the factory after New) and from client when
// the informer lacks a namespace.
func New(config io.Reader, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Plugin, error) {
	if client == nil || factory == nil {
		return nil, fmt.Errorf("%s admission needs a client and an informer factory", Name)
	}
	cfg, err := psconfig.LoadFromReader(config)
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", Name, err)
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s checks: %w", Name, err)
	}
	namespaces := factory.Core().V1().Namespaces()
	pods := factory.Core().V1().Pods()
	p := &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		delegate: &psadmission.Admission{
			Configuration:    cfg,
			Evaluator:        evaluator,
			Metrics:          metricsRecorder(),
			PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
			NamespaceGetter:  psadmission.NamespaceGetterFromListerAndClient(namespaces.Lister(), client),
			PodLister:        psadmission.PodListerFromInformer(pods.Lister()),
		},
	}
	nsSynced := namespaces.Informer().HasSynced
	podsSynced := pods.Informer().HasSynced
	p.SetReadyFunc(func() bool { return nsSynced() && podsSynced() })
	if err := p.delegate.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("%s configuration: %w", Name, err)
	}
	if err := p.delegate.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("%s configuration: %w", Name, err)
	}
	return p, nil
}

// ValidateInitialization reports an incomplete configuration.
func (p *Plugin) ValidateInitialization() error {
	return p.delegate.ValidateConfiguration()
}

var namespacesResource = corev1.Resource("namespaces")
var podsResource = corev1.Resource("pods")

// Validate evaluates pods, pod templates and namespace label changes
// against the namespace's policy. Warnings go to the response's Warning
// headers, audit annotations to the request's audit event.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if gr != namespacesResource && gr != podsResource && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	result := p.delegate.Validate(ctx, attributes{a})
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if len(result.AuditAnnotations) > 0 {
		kv := make([]string, 0, 2*len(result.AuditAnnotations))
		for k, v := range result.AuditAnnotations {
			kv = append(kv, psapi.AuditAnnotationPrefix+k, v)
		}
		audit.AddAuditAnnotations(ctx, kv...)
	}
	if result.Allowed {
		return nil
	}
	out := admission.NewForbidden(a, errors.New("Not allowed by PodSecurity"))
	var status *apierrors.StatusError
	if !errors.As(out, &status) || result.Result == nil {
		return out
	}
	if result.Result.Message != "" {
		status.ErrStatus.Message = result.Result.Message
	}
	if result.Result.Reason != "" {
		status.ErrStatus.Reason = result.Result.Reason
	}
	if result.Result.Details != nil {
		status.ErrStatus.Details = result.Result.Details
	}
	if result.Result.Code != 0 {
		status.ErrStatus.Code = result.Result.Code
	}
	return status
}

// attributes is the request as the library reads it. k1s's storage
// version of every resource is its v1 type, so the objects need no
// conversion (upstream's plugin converts from internal types).
type attributes struct{ admission.Attributes }

func (a attributes) GetObject() (runtime.Object, error) { return a.Attributes.GetObject(), nil }

func (a attributes) GetOldObject() (runtime.Object, error) { return a.Attributes.GetOldObject(), nil }

func (a attributes) GetOperation() admissionv1.Operation {
	return admissionv1.Operation(a.Attributes.GetOperation())
}

func (a attributes) GetUserName() string {
	if u := a.GetUserInfo(); u != nil {
		return u.GetName()
	}
	return ""
}
