// Package fleet manages many deployments of Flink jobs as one: each
// deployment a lifecycle.Controller's job, its spec written in a file.
//
// A Runner keeps the deployments of a Store as their specs say, on
// several clusters: Sync stores the deployments a source states (a
// directory of spec files, say) and marks those it no longer states as
// removed; Pass calls the Controller of each deployment that is due, up
// to Runner.Parallel at once and one call at a time per deployment,
// stores its record after every call, tears a removed deployment down
// (Controller.Delete, under the spec its job last ran under) until that
// is done and then deletes its record; Run does passes until its context
// ends, woken when the watch of a cluster's shared overview shows one of
// a deployment's jobs changed. The Controllers of one cluster share its
// client and one lifecycle.SharedObservation, so a fleet at rest costs
// one overview read per poll and cluster, whatever its size. Results
// (and Runner.OnResult) give each deployment's verdict, situation and
// last error; WriteMetrics writes them in the Prometheus text format.
//
// The deployments of one cluster whose jar files have the same content
// (the SHA-256 of their bytes, whatever the files' names) run one upload
// of it, as every Controller does (lifecycle.Jars): a Controller's upload
// is looked up among the cluster's jars (GET /jars) and made only when
// the cluster has none of that content, named
// flinkkit-<digest>-<file name>; the Runner makes the look-ups and
// uploads of a cluster one at a time (lifecycle.JarSharing). A jar
// rebuilt under the same name is a new content, uploaded once more. The
// jar Plan uploads for a preflight is named flinkkit-<digest>.<file name>,
// run by no Controller. Each pass also does the
// housekeeping of the clusters (Runner.Housekeeping; on by default, at
// most once per cluster and Interval, five minutes): it reads the
// cluster's jars, one request, and the records of every deployment on
// the cluster, and deletes the uploads named by their content that none of them
// names (as its job's, its stable build's, or an action's in flight)
// and that were not uploaded, handed to a Controller or seen in use for
// JarGrace (ten minutes); it waits for a pass with no call of the
// cluster in flight, and holds off every upload of the cluster while it
// deletes. A jar of another name (one a user uploaded) is never
// deleted. It lists the jobs no deployment claims from the shared
// overview (no request of its own): ClusterResults and WriteMetrics
// report them, and nothing stops them. At rest it adds one GET /jars per
// cluster and interval: a fleet of 20 deployments per cluster polled
// every 30 seconds sends about 130 requests per cluster and hour, 11 of
// them the housekeeping's. A cluster whose jars another program or a
// second fleet uploads under the same names needs the housekeeping off.
//
// Runner.Plan says what a change set would do before it is synced: for
// each deployment whether it is added, changed, removed or unchanged, and
// its Controller's plan with the preflight, for a new jar too when the
// plan may upload it (PlanOptions.UploadJars; it is deleted again).
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
