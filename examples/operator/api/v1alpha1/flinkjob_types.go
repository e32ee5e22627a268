package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// FlinkJobSpec is the job the user wants: flinkkit's lifecycle.JobSpec as
// it is (job, state, update, restart, health, rescale, savepoints,
// restore, rollback and allowCancelWithoutState at the top of the spec).
type FlinkJobSpec struct {
	lifecycle.JobSpec `json:",inline"`
}

// FlinkJobStatus is what the operator observed and did: flinkkit's
// lifecycle.JobStatus as it is, the generation it was written for, and
// the Ready condition derived from it.
type FlinkJobStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	lifecycle.JobStatus `json:",inline"`

	// Conditions: Ready is True while the job runs the spec's job (State
	// and Reason Running), and otherwise says why not.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlinkJob is a Flink streaming job on a session cluster, kept as its spec
// says through updates, failures, suspension and deletion by flinkkit's
// lifecycle.Controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobID`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
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
