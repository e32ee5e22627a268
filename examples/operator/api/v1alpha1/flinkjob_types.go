package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// FlinkJobSpec is the job the user wants running.
type FlinkJobSpec struct {
	// JarFile is the path of the job's jar on the operator's file system
	// (a volume, or the operator's image). It is uploaded to the session
	// cluster once and run from there; a new path uploads it again.
	// +kubebuilder:validation:MinLength=1
	JarFile string `json:"jarFile"`
	// EntryClass overrides the jar manifest's main class.
	EntryClass string `json:"entryClass,omitempty"`
	// Args are the program arguments, one per element.
	Args []string `json:"args,omitempty"`
	// Parallelism of the job; 0 keeps the cluster's default.
	// +kubebuilder:validation:Minimum=0
	Parallelism int `json:"parallelism,omitempty"`
	// FlinkConfiguration holds job configuration entries (Flink 1.17+),
	// such as execution.checkpointing.externalized-checkpoint-retention:
	// RETAIN_ON_CANCELLATION, which makes checkpoints restore points.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`

	// Update says how a change of this spec reaches the running job.
	Update policy.UpdatePolicy `json:"update,omitzero"`
	// Restart says whether a failed job is started again.
	Restart policy.RestartPolicy `json:"restart,omitzero"`
	// SavepointInterval, if set, takes a savepoint of the running job
	// this often ("1h"); the savepoints are listed in the status.
	SavepointInterval policy.Duration `json:"savepointInterval,omitzero"`
	// AllowCancelWithoutState lets a delete cancel the job without a
	// final savepoint when none could be taken in time. Without it such
	// a delete leaves the job running, keeps the resource and tries again.
	AllowCancelWithoutState bool `json:"allowCancelWithoutState,omitempty"`
}

// Operation names the lifecycle operation of a FlinkJob's status.
// +kubebuilder:validation:Enum=Deploy;Update;Restart;Savepoint;Teardown
type Operation string

// Operations, each carried out by a lifecycle operation.
const (
	OperationDeploy    Operation = "Deploy"    // lifecycle.Upgrade of no job
	OperationUpdate    Operation = "Update"    // lifecycle.Upgrade of the running job
	OperationRestart   Operation = "Restart"   // lifecycle.Restart of a failed job
	OperationSavepoint Operation = "Savepoint" // lifecycle.TakeSavepoint, periodic
	OperationTeardown  Operation = "Teardown"  // lifecycle.Teardown, on delete
)

// FlinkJobStatus is what the operator observed and did.
type FlinkJobStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DeployedGeneration is the generation of the spec the job runs with.
	DeployedGeneration int64 `json:"deployedGeneration,omitempty"`

	// JobID is the Flink job the operator deployed last.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// JobState is the job's state as Flink last reported it.
	JobState flinkapi.JobState `json:"jobState,omitempty"`
	// DeploymentState is derived from JobState and the operation in
	// flight (policy.DeploymentStateOf).
	DeploymentState policy.DeploymentState `json:"deploymentState,omitempty"`
	// JarID is the jar uploaded to the cluster.
	JarID flinkapi.JarID `json:"jarID,omitempty"`
	// JarFile is the spec's jarFile that JarID was uploaded from.
	JarFile string `json:"jarFile,omitempty"`

	// Operation is the operation in flight, or the last one once
	// Progress is done.
	Operation Operation `json:"operation,omitempty"`
	// OperationGeneration is the generation of the spec Operation applies.
	OperationGeneration int64 `json:"operationGeneration,omitempty"`
	// Progress is the stored state of Operation. It is written before
	// every request the operation sends, so a restarted operator resumes
	// the operation instead of starting another.
	Progress lifecycle.Progress `json:"progress,omitzero"`
	// RetryAt is when an operation that did not succeed may be tried
	// again.
	RetryAt *metav1.Time `json:"retryAt,omitempty"`

	// LatestSavepoint is the newest savepoint of the job: a restore point
	// for updates and restarts.
	LatestSavepoint savepoint.Record `json:"latestSavepoint,omitzero"`
	// Savepoints lists the savepoints taken, oldest first, with the
	// format version they were written in. A status written before
	// format versions holds a bare list here, which still decodes.
	Savepoints savepoint.History `json:"savepoints,omitzero"`

	// Restarts counts the restarts after failures within the restart
	// policy's window (policy.RestartPolicy.CountRestart).
	Restarts int `json:"restarts,omitempty"`
	// LastRestart is when the operator last restarted the job.
	LastRestart *metav1.Time `json:"lastRestart,omitempty"`

	// Conditions: Ready says whether the job runs with the current spec,
	// and why not.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InFlight reports whether an operation is in progress.
func (s *FlinkJobStatus) InFlight() bool {
	return s.Operation != "" && !s.Progress.Done()
}

// FlinkJob is a Flink streaming job on a session cluster, kept running with
// its state through updates, failures and deletion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobID`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.deploymentState`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.progress.phase`
// +kubebuilder:printcolumn:name="Savepoint",type=string,JSONPath=`.status.latestSavepoint.location`,priority=1
type FlinkJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkJobSpec   `json:"spec,omitempty"`
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
