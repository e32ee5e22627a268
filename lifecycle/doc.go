// Package lifecycle turns decisions about a Flink job into REST calls that
// can be interrupted at any point and resumed: taking a savepoint, stopping
// a job with one of several strategies, and submitting a job from a jar
// without ever starting it twice.
//
// Each operation is a small struct of configuration (TakeSavepoint, Stop,
// Submit) whose Step does at most one request and records everything in a
// Progress the caller stores, so a Kubernetes controller calls it once per
// reconcile:
//
//	op := &lifecycle.Stop{Client: client, Job: id, Mode: spec.Update.Mode}
//	res, err := op.Step(ctx, &status.Progress)
//	// store status (with Progress) before anything else, then
//	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
//
// Command-line tools and tests call Run, which loops over Step:
//
//	var p lifecycle.Progress
//	res, err := lifecycle.Run(ctx, op, &p, func(p lifecycle.Progress) { log.Print(p.Phase) })
//	if rec, ok := p.Record(); ok { ... } // restore from rec.Location
//
// # Progress
//
// Progress is plain data with stable JSON names and a DeepCopy. The zero
// Progress starts an operation. Whatever makes a request idempotent is
// recorded in it one Step before the request: the savepoint's trigger id
// (savepoint.Begin) and the id of the job to submit. A caller that crashes
// and restarts passes back what it stored and resumes the same operation:
// the trigger is re-sent with the same id, which Flink 1.15+ deduplicates,
// and a submission is preceded by a look-up of the job id. A savepoint
// location, once seen, is kept in Progress.Location and never cleared.
//
// # Savepoints
//
// TakeSavepoint and the savepoint phase of Stop follow package savepoint:
// trigger (again after transient errors, with the same id), poll, and when
// Flink forgot the trigger id (a JobManager restart, an expired result)
// look the savepoint up in the job's checkpoint history before calling it
// lost. Past the deadline the operation ends OutcomeTimedOut.
//
// # Stop strategies
//
// StopWithSavepoint (Flink's stop, optionally draining), CancelWithSavepoint
// (a savepoint with cancel-job), SavepointThenCancel (a savepoint, then a
// cancel), and CancelWithoutState, which only a Stateless policy allows:
// otherwise Step refuses with ErrStateRequired before any request.
// ChooseStopStrategy picks one by Flink version and policy unless the
// caller forces one. A job is never cancelled after its savepoint failed.
// If the job fails while stopping after the savepoint completed, the
// operation ends OutcomeJobFailedWhileStopping with the location kept.
//
// # Submission
//
// Submit uploads a jar (or reuses one) and runs it with a job id recorded
// beforehand. After a run request whose answer was lost it asks Flink for
// that job id and runs the jar again only if Flink does not know it; an
// answer that the id is in use counts as submitted. It ends once the job
// is RUNNING.
//
// # Outcomes and deadlines
//
// Every phase has a deadline (Timing); every operation ends in a named
// Outcome with a Reason, at the latest at the deadline. Transient errors
// (503, connection resets) never end an operation early: they are kept in
// Progress.LastError and the step is retried with backoff.
package lifecycle
