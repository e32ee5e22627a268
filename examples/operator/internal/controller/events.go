package controller

import (
	"errors"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// ReasonJobException is the reason of the Warning event that reports the
// root cause of the job's last failure, as the JobManager's exceptions
// show it (status.failure).
const ReasonJobException = "JobException"

// maxEventNote bounds an event's note: events.k8s.io/v1 takes at most
// 1024 bytes.
const maxEventNote = 1024

// reportFailure emits one Warning event, JobException, when a reconcile
// stored a new failure (status.failure, the root cause of the job's last
// failure) over before, the status it started from: a cause other than
// the one stored before, or the same cause again from a job that entered
// a failing state (FAILING, RESTARTING, FAILED) since, or another job.
// The stored status is the record of what was reported: a reconcile
// whose status update did not go through reports nothing, and the one
// that stores the failure later reports it then, once.
func (r *FlinkJobReconciler) reportFailure(job *v1alpha1.FlinkJob, before *lifecycle.JobStatus) {
	if !newFailure(before, &job.Status.JobStatus) {
		return
	}
	cause := job.Status.Failure
	note := "job " + string(job.Status.JobID) + ": " + cause
	// The note is a format: the cause goes in as an argument, never as
	// the format itself.
	r.event(job, corev1.EventTypeWarning, ReasonJobException, "Observe", "%s", truncate(note, maxEventNote))
}

// ReasonJarRefused is the reason of the Warning event of a spec whose
// jarFile is outside --jar-root, not a regular file, or too large:
// nothing of it was read or uploaded.
const ReasonJarRefused = "JarRefused"

// reportInvalid emits one Warning event, JarRefused, when a reconcile
// stored a new refusal of the spec's jar (err matching
// lifecycle.ErrJarRefused, a status message other than before's). Other
// invalid specs show in the Ready condition only.
func (r *FlinkJobReconciler) reportInvalid(job *v1alpha1.FlinkJob, before *lifecycle.JobStatus, err error) {
	st := &job.Status.JobStatus
	if !errors.Is(err, lifecycle.ErrJarRefused) || st.Reason != lifecycle.ReasonInvalidSpec ||
		before.Reason == st.Reason && before.Message == st.Message {
		return
	}
	r.event(job, corev1.EventTypeWarning, ReasonJarRefused, "Validate", "%s", truncate(st.Message, maxEventNote))
}

// newFailure reports whether after records a failure that before did not.
func newFailure(before, after *lifecycle.JobStatus) bool {
	switch {
	case after.Failure == "":
		return false
	case after.Failure != before.Failure:
		return true
	}
	return failing(after.JobState) && (!failing(before.JobState) || before.JobID != after.JobID)
}

// failing reports whether a job in state s failed: Flink restarts it or
// gave up on it.
func failing(s flinkapi.JobState) bool {
	return s == flinkapi.JobFailing || s == flinkapi.JobRestarting || s == flinkapi.JobFailed
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
