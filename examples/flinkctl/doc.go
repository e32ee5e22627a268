// Command flinkctl runs Apache Flink jobs on a session cluster with
// flinkkit, for the people who run them by hand: what they do with curl
// and Flink's web UI, done safely.
//
//	flinkctl apply -f job.yaml|DIR   # deploy or update, until each job runs stably
//	flinkctl plan -f job.yaml|DIR    # what apply would do; exit code by verdict
//	flinkctl run -f DIR              # a daemon keeping DIR's jobs as they say
//	flinkctl status [NAME]           # the stored status of applied jobs
//	flinkctl delete NAME             # stop with a final savepoint, kept under NAME
//	flinkctl jobs                    # the cluster's jobs, in a table
//	flinkctl savepoint JOB           # a savepoint; the job keeps running
//	flinkctl stop JOB [--strategy S] # stop with a savepoint, strategy by version
//	flinkctl cancel JOB [--force]    # refused for a job with state unless --force
//	flinkctl savepoints dispose NAME --keep 5 [--yes]
//	flinkctl health JOB
//	flinkctl fake [--port 8081]      # a fake JobManager (flinktest) to try it on
//	flinkctl completion bash|zsh|fish
//
// # Declarative
//
// A job file holds a name, a cluster and the fields of lifecycle.JobSpec, read by
// fleet.DecodeSpec: strictly, an error naming the file, the line and the
// field. A job whose spec does not set restart.mode is restarted from its
// newest state when it fails or Flink loses it ("restart: {mode: Never}"
// opts out). -f names a job file or a directory of them (*.yaml, *.yml,
// *.json). The jobs run on the cluster of --flink-url, named "default" in
// their records, or on the clusters of a --clusters file, read by
// fleet.DecodeClusters:
//
//	clusters:
//	  - name: eu-1
//	    url: https://flink-eu-1.example.com:8081
//	  - name: us-1
//	    url: https://flink-us-1.example.com:8081
//
// each job file then naming its cluster (cluster: eu-1; it may be left out
// when the file lists one cluster). The credentials and TLS flags apply
// to every cluster.
//
// apply, plan, run and delete act through a fleet.Runner whose Store is
// <state-dir>/records, a fleet.DirStore: one fleet.Record per job (its
// spec, the spec its job last ran under, its lifecycle.JobStatus),
// written atomically after every call of the job's
// lifecycle.Controller, so that a command run again resumes the action in
// flight. apply syncs the files' jobs (leaving other applied jobs as they
// are) and does passes until each converges (lifecycle.JobStatus.Converged),
// an action fails, --timeout passes or the user interrupts it. plan is
// fleet.Runner.Plan: it reads and changes nothing; its exit code is the
// worst verdict of its jobs (2 Invalid, 3 Blocked, 1 Failed or not
// planned, else 0). run syncs the directory (removing the applied jobs
// it no longer names), runs the Runner until SIGINT or SIGTERM, reads the
// directory again every --interval, and with --metrics-addr serves
// /metrics. delete removes the job through the runner: Controller.Delete
// under the spec its job last ran under, whose final savepoint goes to
// the lifecycle.FileStore in <state-dir>/restore-points under NAME, and
// then its record; a later apply of NAME starts from it. One command at a
// time acts on the records (a lock in the state directory); status reads
// them without a lock and never waits, also while run runs.
//
// The state directories of releases before the runner kept each job in
// <state-dir>/deployments/NAME.json: those are read as the jobs' records
// (on the cluster "default"), and the first write of a record moves it
// into <state-dir>/records, renaming the old file NAME.json.migrated.
//
// A NAME is segments separated by '/' (app/streamlet), each of letters,
// digits, '.', '_' and '-' starting with a letter or digit; its files in
// the state directory have '~' for '/'.
//
// # Imperative
//
// savepoint, stop, cancel and savepoints dispose run one lifecycle
// operation each through lifecycle.Run, storing its Progress in
// <state-dir>/operations after every step (written as the records are,
// atomically), so that the same command run
// again after Ctrl-C resumes the same savepoint (same trigger id) or stop.
// A stop of an applied job's job is recorded in its status: suspended,
// its savepoint the newest state, from which the next apply starts it.
//
// # Output and exit codes
//
// On a terminal a live line shows the operation's phase, the savepoint's
// acknowledged subtasks and size, and the time elapsed, rewritten in
// place and cut to the terminal's width; on a pipe each change is a plain
// line. -o json prints the result
// as JSON. Errors are one line on stderr. Exit codes: 0 succeeded, 1
// failed, 2 bad input, 3 blocked by policy, 4 timed out, 5 cluster
// unreachable, 130 interrupted.
package main
