package helm

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The resources of helm.cattle.io/v1, k3s helm-controller's API.
var (
	HelmChartGVR       = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmcharts"}
	HelmChartConfigGVR = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmchartconfigs"}
)

// HelmChart is helm-controller's HelmChart, the fields k1s reads. The
// objects are handled as unstructured and converted to this.
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HelmChartSpec   `json:"spec,omitempty"`
	Status            HelmChartStatus `json:"status,omitempty"`
}

// HelmChartSpec: what to install and how (helm-controller's schema).
type HelmChartSpec struct {
	TargetNamespace       string                        `json:"targetNamespace,omitempty"`
	CreateNamespace       bool                          `json:"createNamespace,omitempty"`
	Chart                 string                        `json:"chart,omitempty"`
	Version               string                        `json:"version,omitempty"`
	Repo                  string                        `json:"repo,omitempty"`
	RepoCA                string                        `json:"repoCA,omitempty"`
	Set                   map[string]intstr.IntOrString `json:"set,omitempty"`
	Values                *apiextensionsv1.JSON         `json:"values,omitempty"`
	ValuesContent         string                        `json:"valuesContent,omitempty"`
	ChartContent          string                        `json:"chartContent,omitempty"`
	TakeOwnership         bool                          `json:"takeOwnership,omitempty"`
	Timeout               *metav1.Duration              `json:"timeout,omitempty"`
	FailurePolicy         string                        `json:"failurePolicy,omitempty"`
	InsecureSkipTLSVerify bool                          `json:"insecureSkipTLSVerify,omitempty"`
	PlainHTTP             bool                          `json:"plainHTTP,omitempty"`
	Driver                string                        `json:"driver,omitempty"`
}

// HelmChartStatus is helm-controller's status: conditions (k1s writes
// Failed) and jobName (empty: k1s runs no Job).
type HelmChartStatus struct {
	JobName    string               `json:"jobName,omitempty"`
	Conditions []HelmChartCondition `json:"conditions,omitempty"`
}

// HelmChartCondition is one status condition.
type HelmChartCondition struct {
	Type    string                 `json:"type"`
	Status  corev1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
}

// HelmChartConfig adds values to the HelmChart of its name and namespace.
type HelmChartConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HelmChartConfigSpec `json:"spec,omitempty"`
}

// HelmChartConfigSpec: values over the chart's own, and a failure policy.
type HelmChartConfigSpec struct {
	Values        *apiextensionsv1.JSON `json:"values,omitempty"`
	ValuesContent string                `json:"valuesContent,omitempty"`
	FailurePolicy string                `json:"failurePolicy,omitempty"`
}

const (
	// ConditionFailed is helm-controller's Failed condition.
	ConditionFailed = "Failed"
	// Finalizer keeps a HelmChart until its release is uninstalled.
	Finalizer = "helm.cattle.io/k1s-helm-controller"
	// AnnotationConfigHash records the hash of the chart and values last
	// installed (helm-controller keeps the same key on its Job).
	AnnotationConfigHash = "helmcharts.helm.cattle.io/configHash"

	failurePolicyAbort = "abort"
	failurePolicyRetry = "retry"
)
