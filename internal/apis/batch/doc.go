// Package batch owns defaulting and validation for the batch/v1 kinds the
// k1s apiserver serves, Job and CronJob, and the cron schedule parser the
// cronjob controller shares with validation (ParseSchedule).
//
// It works directly on the versioned k8s.io/api/batch/v1 types. Behaviour
// follows upstream Kubernetes v1.37 (the batch v1 defaulters and the batch
// validation package) with feature gates at their v1.37 defaults: JobManagedBy
// status rules on, pod templates of suspended, not-yet-started Jobs mutable
// (scheduling directives and container resources), scheduling workloads for
// Jobs off. Pod templates are defaulted and validated by package core; this
// package adds the Job rules on top (restartPolicy OnFailure or Never,
// generated selectors, completion modes, failure and success policies,
// template immutability). Field paths and error types match upstream. The
// code is written for k1s.
//
// The Job registry must call GenerateJobSelector on create before
// validation, and DropDisabledJobFields on create and update, as upstream's
// strategy does.
package batch
