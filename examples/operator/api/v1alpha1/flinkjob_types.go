package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// FlinkJobSpec is the job the user wants: where it runs (mode, and the
// application cluster of the Application mode), and flinkkit's
// lifecycle.JobSpec as it is (job, state, update, restart, health,
// rescale, savepoints, restore, rollback and allowCancelWithoutState at
// the top of the spec).
//
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'Application' || has(self.application)",message="mode Application needs application.image"
type FlinkJobSpec struct {
	// Mode is where the job runs: Session (the default), a jar run on the
	// session cluster the operator was started for; or Application, a
	// Flink application cluster of its own per job, which the operator
	// creates from Application.
	// +kubebuilder:validation:Enum=Session;Application
	// +optional
	Mode Mode `json:"mode,omitempty"`
	// Application is the application cluster of the Application mode.
	// +optional
	Application *ApplicationCluster `json:"application,omitempty"`
	// SessionCluster names the FlinkSessionCluster, in the FlinkJob's
	// namespace, whose session cluster runs the job in the Session mode;
	// unset: the operator's --flink-url.
	// +optional
	SessionCluster string `json:"sessionCluster,omitempty"`

	lifecycle.JobSpec `json:",inline"`
}

// Mode is where a FlinkJob's job runs.
type Mode string

// The modes of a FlinkJob.
const (
	// ModeSession runs the job on the operator's session cluster (jar
	// upload and run).
	ModeSession Mode = "Session"
	// ModeApplication runs each job in an application cluster of its own:
	// a JobManager Deployment and Service and a TaskManager Deployment,
	// started with the job's id and restore path in their Flink
	// configuration; spec.job.jarFile is then the job's jar inside the
	// image.
	ModeApplication Mode = "Application"
)

// ApplicationCluster is the application cluster a job runs in, in the
// Application mode. The job is spec.job: its entry class, arguments,
// parallelism (TaskManagers: parallelism over
// taskmanager.numberOfTaskSlots, 1 by default) and Flink configuration.
type ApplicationCluster struct {
	// Image is the Flink image with the job's jar: in /opt/flink/usrlib,
	// Flink's user library, or at spec.job.jarFile (passed with --jars).
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
}

// FlinkJobStatus is what the operator observed and did: flinkkit's
// lifecycle.JobStatus as it is, the generation it was written for, and
// the Ready, Progressing and Degraded conditions derived from it.
type FlinkJobStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	lifecycle.JobStatus `json:",inline"`

	// Conditions, all derived from the status's verdict
	// (lifecycle.JobStatus.VerdictFor: Done, Progressing, Waiting,
	// Blocked, Failed, Invalid, Deleted): Ready is True while the job
	// runs the spec's job (Done, State Running), and otherwise says why
	// not; Progressing is True while the verdict is Progressing or
	// Waiting, or a failed action waits for its retry; Degraded is True
	// while it is Waiting, Blocked, Failed or Invalid (failed, lost,
	// rolled back, an action failed and waits for its retry, the
	// JobManager unreachable, ...).
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlinkJob is a Flink streaming job, on a session cluster or in an
// application cluster of its own, kept as its spec says through updates,
// failures, suspension and deletion by flinkkit's lifecycle.Controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobID`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.status.action`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.progress.phase`
// +kubebuilder:printcolumn:name="Savepoint",type=string,JSONPath=`.status.latest.location`,priority=1
type FlinkJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the job the user wants.
	Spec FlinkJobSpec `json:"spec,omitempty"`
	// Status is what the operator observed and did; only the operator
	// writes it.
	Status FlinkJobStatus `json:"status,omitempty"`
}

// FlinkJobList is a list of FlinkJobs.
//
// +kubebuilder:object:root=true
type FlinkJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkJob `json:"items"`
}
