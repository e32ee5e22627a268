// Package localcluster is a lifecycle.Deployer of Flink application
// clusters on this machine: for each job, a JobManager running Flink's
// StandaloneApplicationClusterEntryPoint, which starts the job from the
// jar on its classpath at its own start, and one TaskManager, as two java
// processes on 127.0.0.1 with a REST port of their own. A tool or a test
// uses it to run each job in a cluster of its own, as an operator on
// Kubernetes would, without Kubernetes:
//
//	d := &localcluster.Deployer{LibDir: "/opt/flink/lib", WorkDir: "/var/lib/myjobs"}
//	submit := &lifecycle.Submit{Env: env, Deployer: d, ...} // or Controller.Deployer
//
// or directly:
//
//	c, err := d.Deploy(ctx, lifecycle.DeployRequest{JobID: id, JarFile: "job.jar", EntryClass: "com.example.Job"})
//	api, err := d.Client(c) // the job's REST API: savepoints, stop, checkpoints
//	err = d.Delete(ctx, c)
//
// # Clusters
//
// Each cluster lives in WorkDir/<ClusterName(job id)>: its config.yaml
// (the request's FlinkConfiguration with lifecycle.ApplicationConfiguration's
// job id, restore path and execution.shutdown-on-application-finish: false,
// over the Deployer's Configuration and its defaults), the processes' logs
// and pid files, and cluster.json with its REST URL. The JobManager and
// the TaskManager have the request's jar on their classpath; the job id,
// the restore path and allowNonRestoredState are also given on the entry
// point's command line (--job-id, --fromSavepoint,
// --allowNonRestoredState), where Flink takes the savepoint settings from.
// Checkpoints and savepoints go to WorkDir/checkpoints and
// WorkDir/savepoints, which outlive the clusters. The JVMs are small (a
// JobManager of 768 MiB, a TaskManager of 1 GiB).
//
// The JobManager stays after its job ended (FINISHED after a stop with a
// savepoint, CANCELED, FAILED), so the job's final state, a stop's result
// and its checkpoint history can be read; a job whose main method fails is
// FAILED with its exception (SubmitFailedJob). A JobManager that cannot
// start its job at all exits on Flink 1.20 (a restore path that does not
// exist, for one), which Exists then reports; on Flink 2.3 it stays and
// shows the job FAILED.
//
// # Idempotency
//
// Deploy returns the cluster it started for a job id before, also after
// a restart of the calling process and whatever became of the cluster
// since (its JobManager may have exited: Exists says so); only Delete
// makes room for a new one. The processes run in sessions of their own and
// outlive the calling process; they are found again by a marker on their
// command lines, never by a pid alone. Deploy and Delete of one cluster
// are serialised by a lock file in WorkDir, across processes too. Delete
// stops both processes (SIGTERM, SIGKILL after StopGrace), waits until
// they have exited and removes the cluster's folder.
//
// Errors a retry will not change (no LibDir, no java, a jar that does not
// exist, a JobManager that exits while it starts) wrap
// lifecycle.ErrDeployRefused and name what was wrong.
//
// The package needs Linux (/proc).
package localcluster
