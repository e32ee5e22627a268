// Package fleet manages many deployments of Flink jobs as one: each
// deployment a lifecycle.Controller's job, its spec written in a file.
//
// A Record keeps what is stored of one deployment: the spec it should
// run, the spec its job was last applied under (which
// lifecycle.Controller.Delete needs to tear the job down once the spec is
// gone from its source) and the Controller's status, written together
// and atomically. Store is the interface of where records are kept;
// DirStore keeps them in a directory, one file per deployment, its
// writers serialised by a file lock and its readers never waiting for
// them.
//
// DecodeSpec reads a lifecycle.JobSpec from a YAML or JSON file, and
// DecodeClusters the list of clusters a fleet runs on. Both are strict:
// an unknown field, a value of the wrong kind or a spec that does not
// validate is an error that names the file, the line and the field as
// the file writes it:
//
//	jobs/orders.yaml:12: job.paralelism: unknown field (did you mean "parallelism"?)
//
// Package fleet imports lifecycle; lifecycle does not import it.
package fleet
