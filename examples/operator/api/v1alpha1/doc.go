// Package v1alpha1 is the API of the example operator: the FlinkJob custom
// resource, a streaming job on a Flink session cluster, in the API group
// flinkkit.dev.
//
// Its spec says which jar runs with which arguments and embeds flinkkit's
// policy.UpdatePolicy and policy.RestartPolicy as they are; its status embeds
// the savepoint records (savepoint.Record, savepoint.History) and the
// lifecycle.Progress of the operation in flight, so that an operator that
// restarts resumes that operation from the stored status:
//
//	apiVersion: flinkkit.dev/v1alpha1
//	kind: FlinkJob
//	metadata:
//	  name: counter
//	spec:
//	  jarFile: /jars/counter.jar
//	  args: ["--out", "/data/counter"]
//	  parallelism: 2
//	  update:
//	    mode: Savepoint
//	    maxStateAge: 6h
//	  restart:
//	    mode: FromLatestState
//	    backoff: 30s
//	  savepointInterval: 1h
//
// # Generated code
//
// zz_generated.deepcopy.go and config/crd are written by controller-gen
// (go generate ./... in the operator's module, or make generate there);
// none of it is edited by hand.
//
// +kubebuilder:object:generate=true
// +groupName=flinkkit.dev
package v1alpha1
