// Package history owns ControllerRevisions as the DaemonSet and StatefulSet
// controllers use them: naming and hashing a revision (parent name plus an
// FNV-32 hash of its data, made unique with the parent's collision count),
// ordering revisions, comparing their data, and listing, creating
// (resolving name collisions), renumbering, deleting, adopting and
// releasing the revisions of one parent through an informer and a client.
//
// A revision's Data is whatever the controller stores; both users store a
// strategic merge patch that replaces spec.template, so that kubectl
// rollout history and undo can read it as upstream's do.
package history
