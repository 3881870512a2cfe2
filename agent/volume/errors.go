package volume

import (
	"errors"
	"fmt"
)

// FailedMountReason is the event reason for a volume that could not be set up
// (the kubelet's "FailedMount").
const FailedMountReason = "FailedMount"

// VolumeError is the failure to set up one volume of a pod. Its message is
// the one the kubelet puts in a FailedMount event, e.g.
//
//	MountVolume.SetUp failed for volume "config" : configmap "app" not found
type VolumeError struct {
	// Volume is the pod volume's name.
	Volume string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *VolumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// Unwrap returns the cause.
func (e *VolumeError) Unwrap() error { return e.Err }

// VolumeErrors returns the per-volume failures inside an error returned by
// SetUpPod, in the order of the pod's volumes; the agent records one
// FailedMount event for each.
func VolumeErrors(err error) []*VolumeError {
	var out []*VolumeError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		var ve *VolumeError
		if errors.As(err, &ve) && ve == err {
			out = append(out, ve)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if errors.As(err, &ve) {
			out = append(out, ve)
		}
	}
	walk(err)
	return out
}

// notFoundError is a missing configMap or secret, with the kubelet's message
// ("configmap \"x\" not found") whatever the client said. It wraps the
// client's error, so apierrors.IsNotFound still answers true.
type notFoundError struct {
	kind, name string
	err        error
}

func (e *notFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.kind, e.name) }
func (e *notFoundError) Unwrap() error { return e.err }
