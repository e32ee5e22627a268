// Package v1alpha1 is the API of the example operator: the FlinkJob custom
// resource, a streaming job on a Flink session cluster, in the API group
// flinkkit.dev.
//
// Its spec is flinkkit's lifecycle.JobSpec, inline: the job to run (jar,
// arguments, parallelism, configuration), the state it should be in
// (Running or Suspended), and the policies for updates, restarts, health,
// rescales, savepoints, restore requests and rollbacks. Its status is
// lifecycle.JobStatus, inline, which lifecycle.Controller writes on every
// call and reads back on the next, with the generation it was written for
// and a Ready condition derived from it:
//
//	apiVersion: flinkkit.dev/v1alpha1
//	kind: FlinkJob
//	metadata:
//	  name: counter
//	spec:
//	  job:
//	    jarFile: /jars/counter.jar
//	    args: ["--out", "/data/counter"]
//	    parallelism: 2
//	  update:
//	    mode: Savepoint
//	    maxStateAge: 6h
//	  restart:
//	    mode: FromLatestState
//	    backoff: 30s
//	  savepoints:
//	    interval: 1h
//	    maxCount: 5
//	  rollback:
//	    enabled: true
//
// Set spec.state to Suspended to stop the job with a savepoint, and back
// to Running to resume it from there. The CRD does not check flinkkit's
// enums and limits beyond what the markers say: lifecycle.JobSpec.Validate
// does, and the controller acts on no spec that fails it.
//
// # Generated code
//
// zz_generated.deepcopy.go and config/crd are written by controller-gen's
// object and crd generators (go generate ./... in the operator's module,
// or make generate there); none of it is edited by hand.
//
// +kubebuilder:object:generate=true
// +groupName=flinkkit.dev
package v1alpha1
