// Package persistentvolume owns the persistentvolume-binder controller,
// upstream's PersistentVolume controller for a cluster whose provisioners
// are all external:
//
//   - it binds a PersistentVolumeClaim to the smallest Available
//     PersistentVolume that fits it (class, size, access modes, volume
//     mode, selector), or to the volume it names (spec.volumeName), and a
//     volume pre-bound to a claim (spec.claimRef) to that claim, with
//     upstream's annotations (pv.kubernetes.io/bind-completed,
//     pv.kubernetes.io/bound-by-controller);
//   - a claim of a WaitForFirstConsumer class waits (event
//     WaitForFirstConsumer or WaitForPodScheduled) until the scheduler
//     binds a volume to it or sets volume.kubernetes.io/selected-node;
//   - with no volume to bind, a claim of a class is annotated for the
//     class's external provisioner (volume.kubernetes.io/storage-provisioner
//     and the beta spelling; event ExternalProvisioning), which creates a
//     volume pre-bound to it; a claim without a class gets the default
//     StorageClass retroactively;
//   - phases (status.lastPhaseTransitionTime on volumes) and events as
//     upstream: Lost claims, Released volumes; reclaim Retain keeps a
//     released volume, Delete leaves a provisioned volume to its
//     provisioner and fails (VolumeFailedDelete) one no provisioner owns,
//     Recycle fails (no recycler).
package persistentvolume
