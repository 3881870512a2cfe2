// Package cronjob owns the CronJob controller, upstream's cronjob
// controller v2: each CronJob is synced when it or one of its Jobs changes
// and again at its next scheduled time (read from an injected clock).
//
// At a scheduled time the controller creates the Job
// <cronjob>-<scheduled time in minutes since the epoch> from the job
// template (annotated with batch.kubernetes.io/cronjob-scheduled-timestamp)
// unless the CronJob is suspended, the time is older than
// startingDeadlineSeconds, or concurrencyPolicy Forbid finds a Job still
// running; Replace deletes the running Jobs first. Only the latest of
// several missed times is run; more than 100 missed times give a
// TooManyMissedTimes event. The schedule is read in spec.timeZone (or a
// TZ=/CRON_TZ= prefix, with an UnsupportedSchedule event). Finished Jobs
// beyond successfulJobsHistoryLimit and failedJobsHistoryLimit are deleted,
// oldest first, and status.active, lastScheduleTime and lastSuccessfulTime
// are kept up to date.
package cronjob
