// Command flinkctl runs Apache Flink jobs on a session cluster with
// flinkkit, for the people who run them by hand: what they do with curl
// and Flink's web UI, done safely.
//
//	flinkctl apply -f job.yaml        # deploy or update, until it runs stably
//	flinkctl status [NAME]            # the stored status of applied jobs
//	flinkctl delete NAME              # stop with a final savepoint, kept under NAME
//	flinkctl jobs                     # the cluster's jobs, in a table
//	flinkctl savepoint JOB            # a savepoint; the job keeps running
//	flinkctl stop JOB [--strategy S]  # stop with a savepoint, strategy by version
//	flinkctl cancel JOB [--force]     # refused for a job with state unless --force
//	flinkctl savepoints dispose NAME --keep 5 [--yes]
//	flinkctl health JOB
//	flinkctl fake [--port 8081]       # a fake JobManager (flinktest) to try it on
//	flinkctl completion bash|zsh|fish
//
// # Declarative
//
// A job file holds a name and the fields of lifecycle.JobSpec. apply runs
// lifecycle.Controller.Reconcile until the job converges
// (lifecycle.JobStatus.Converged), an action fails, --timeout passes or
// the user interrupts it, and writes the spec and the status to
// <state-dir>/deployments/NAME.json after every call, atomically (a
// temporary file renamed over the old one): apply again resumes the
// action in flight. A lock file keeps two flinkctl processes from acting
// on one name. delete runs Controller.Delete, whose final savepoint goes
// to the lifecycle.FileStore in <state-dir>/restore-points under NAME; a
// later apply of NAME starts from it.
//
// A NAME is segments separated by '/' (app/streamlet), each of letters,
// digits, '.', '_' and '-' starting with a letter or digit; its files in
// the state directory have '~' for '/'.
//
// # Imperative
//
// savepoint, stop, cancel and savepoints dispose run one lifecycle
// operation each through lifecycle.Run, storing its Progress in
// <state-dir>/operations after every step, so that the same command run
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
