// Package ttlafterfinished owns the TTL-after-finished controller: a Job
// whose spec.ttlSecondsAfterFinished is set is deleted, with its pods
// (background propagation), that many seconds after it finished, that is
// after the lastTransitionTime of its Complete or Failed condition. Jobs
// without the field, unfinished Jobs and Jobs already being deleted are
// left alone.
package ttlafterfinished
