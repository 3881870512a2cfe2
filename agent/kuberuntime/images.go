package kuberuntime

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Waiting reasons upstream reports for image problems.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
)

// ImageError is a container's image problem, with its waiting reason.
type ImageError struct {
	Reason  string
	Message string
}

func (e *ImageError) Error() string { return e.Message }

// ensureImage makes the container's image present per imagePullPolicy and
// returns the image reference to run. No registry may be reachable: a pull
// then fails with ErrImagePull and a clear message.
func (m *Manager) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	status, err := m.images.ImageStatus(ctx, spec, false)
	if err != nil {
		return "", &ImageError{Reason: ReasonErrImagePull, Message: fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)}
	}
	present := status.GetImage() != nil
	ref := ""
	if present {
		ref = status.GetImage().GetId()
	}
	pull := false
	switch c.ImagePullPolicy {
	case corev1.PullNever:
		if !present {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
			m.event(pod, corev1.EventTypeWarning, "ErrImageNeverPull", c, msg)
			return "", &ImageError{Reason: ReasonErrImageNeverPull, Message: msg}
		}
	case corev1.PullAlways:
		pull = true
	default: // IfNotPresent
		pull = !present
	}
	if !pull {
		if present {
			m.event(pod, corev1.EventTypeNormal, "Pulled", c, fmt.Sprintf("Container image %q already present on machine", c.Image))
		}
		return ref, nil
	}
	key := string(pod.UID) + "/" + c.Name + "/pull"
	if m.backOff.IsInBackOffSinceUpdate(key, m.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		m.event(pod, corev1.EventTypeNormal, "BackOff", c, msg)
		return "", &ImageError{Reason: ReasonImagePullBackOff, Message: msg}
	}
	m.event(pod, corev1.EventTypeNormal, "Pulling", c, fmt.Sprintf("Pulling image %q", c.Image))
	pulled, err := m.images.PullImage(ctx, spec, nil, sandbox)
	if err != nil {
		m.backOff.Next(key, m.clock.Now())
		msg := fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)
		if c.ImagePullPolicy == corev1.PullAlways && present {
			msg += " (no registry answers; the image is present but imagePullPolicy is Always)"
		}
		m.event(pod, corev1.EventTypeWarning, "Failed", c, msg)
		return "", &ImageError{Reason: ReasonErrImagePull, Message: msg}
	}
	m.backOff.Reset(key)
	m.event(pod, corev1.EventTypeNormal, "Pulled", c, fmt.Sprintf("Successfully pulled image %q", c.Image))
	return pulled, nil
}

// IsImageError reports whether err is a container image problem.
func IsImageError(err error) (*ImageError, bool) {
	var ie *ImageError
	ok := errors.As(err, &ie)
	return ie, ok
}
