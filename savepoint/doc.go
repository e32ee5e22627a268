// Package savepoint derives where a Flink savepoint stands from the answers
// of Flink's REST API, and decides when the next one is due and which old
// ones to dispose of. It is pure: it does no I/O, starts no goroutines and
// never reads the clock; every function that needs the time takes now.
//
// The caller (package lifecycle, or an operator's reconcile loop) calls
// flinkapi and feeds what it returned, answer or error, to this package,
// which returns the next Status to store:
//
//	st := savepoint.Begin(flinkapi.OpSavepoint, job, flinkapi.NewTriggerID(),
//		savepoint.ReasonUpdate, now, now.Add(10*time.Minute))
//	// store st, then:
//	op, err := client.TriggerSavepoint(ctx, job, flinkapi.SavepointRequest{TriggerID: st.TriggerID})
//	st = savepoint.AfterTrigger(st, op, err, now)
//	// store st; on each later reconcile:
//	switch {
//	case st.NeedsTrigger(): // re-send the trigger with st.TriggerID
//	case st.NeedsPoll():
//		res, err := client.OperationStatus(ctx, st.Operation())
//		st = savepoint.AfterPoll(st, res, err, now)
//	case st.NeedsRecovery():
//		stats, err := client.Checkpoints(ctx, st.JobID)
//		if err == nil {
//			st = savepoint.Recover(st, stats, now)
//		}
//	case st.NeedsJobList():
//		jobs, err := client.ListJobs(ctx)
//		listed, state := find(jobs, st.JobID) // is the job there, in which state
//		st = savepoint.AfterJobList(st, listed, state, err, now)
//	case st.Final():
//		if rec, ok := savepoint.RecordOf(st); ok { ... } // restore point
//	}
//	st = savepoint.CheckDeadline(st, now)
//
// # States
//
// A Status is Pending (trigger id recorded, trigger not yet acknowledged),
// InFlight, Lost (Flink forgot the trigger id) or Unconfirmed (Flink said
// it does not know the job) while it is active, and then ends Succeeded,
// Failed, LostForGood, JobGone, JobTerminal or TimedOut. Final states are
// sticky: a later answer never changes them, except that an answer
// carrying a savepoint location adds it to a status that has none. A
// Location, once set, is never cleared or replaced. Transient answers keep
// the state, count Attempts and set LastError; they never make a savepoint
// Failed.
//
// An answer that Flink does not know the job ends nothing by itself:
// during a JobManager failover one can come while the job runs, and Flink
// gives it for a job that ended, too, when a trigger it forgot (a stop
// whose answer was lost) is sent again. The Status turns Unconfirmed,
// remembering the state it was in (Before) and whether the operation of
// its trigger id completed with the answer (OperationFailed), and Flink's
// job list decides (AfterJobList): a job it does not list is JobGone; a
// job it lists ended is Lost, as its savepoint may have completed before
// it did; a job it lists running makes a failed operation's savepoint
// Failed, and after a 404 the Status goes back to Before, to send the
// trigger again with the same id, poll or recover.
//
// # Derivation rules
//
// AfterTrigger takes the answer to the trigger request, AfterPoll the
// answer to the status call, Recover the job's checkpoint statistics,
// AfterJobList Flink's job list, and CheckDeadline the time alone. Each
// applies the deadline to its result. "active" is Pending, InFlight, Lost
// or Unconfirmed; "final" any other set state. An Unconfirmed status takes
// a poll's definite answer as its Before state would.
//
//	answer                                      from            next state
//	------------------------------------------  --------------  ---------------------------------------
//	trigger: 202 with a trigger id              Pending         InFlight, with Flink's trigger id
//	trigger: 400, or a 404 not for the job      Pending         Failed, Flink's message
//	poll: IN_PROGRESS                           active          InFlight
//	poll: COMPLETED with a location             active          Succeeded, Location
//	poll: COMPLETED with a failure              active          Failed, root "Caused by" message
//	poll: COMPLETED, stop failed after its      active          Failed, Location from the message
//	  savepoint (StopWithSavepointStopping...)
//	poll: COMPLETED, FlinkJobNotFoundException  active          Unconfirmed, OperationFailed
//	poll: COMPLETED, no location, no failure    active          Failed
//	poll: 404 for the trigger id, other 404     InFlight, Lost  Lost (never Failed)
//	poll: 404 for the trigger id, other 404     Pending         Pending: send the trigger again
//	poll: 400                                   active          Failed, Flink's message
//	404 for the job (or a 500 naming            active          Unconfirmed, Before the state it was in
//	  FlinkJobNotFoundException)
//	409                                         active          JobTerminal
//	ErrInvalidInput, ErrUnsupported             active          Failed (nothing was sent)
//	408, 429, 5xx, no answer, other errors      active          same state and Location, Attempts+1
//	Recover: completed savepoint triggered      Lost            Succeeded, Location, Recovered
//	  at or after TriggerTime-ClockSkew
//	Recover: such a savepoint IN_PROGRESS       Lost            Lost
//	Recover: history reaches back, no match     Lost            LostForGood
//	Recover: no match, job restored after the   Lost            LostForGood
//	  trigger (the restart aborted it)
//	Recover: history does not reach back        Lost            Lost
//	job list: does not list the job             Unconfirmed     JobGone, Flink's message
//	job list: the job FINISHED, CANCELED,       Unconfirmed     Lost (see Recover)
//	  FAILED
//	job list: the job in another state          Unconfirmed     Failed, if OperationFailed;
//	                                                            else Before
//	job list: an error                          Unconfirmed     Unconfirmed, Attempts+1
//	deadline reached                            active          TimedOut
//	any answer                                  final           same state; a missing Location is added
//
// A Status tells the caller what to do next: NeedsTrigger, NeedsPoll,
// NeedsRecovery, NeedsJobList, or nothing once Final. Unknown reports that the last
// answer was transient. FailureMessage turns a Java stack trace into the
// one-line root cause stored in Failure.
//
// # Progress
//
// FindProgress finds the savepoint of an InFlight Status among the job's
// in-progress checkpoints, and reports acknowledged and total subtasks and
// the state size so far; Progress.String gives "3/4 subtasks (75%), 1.2 MiB".
//
// # Records and age
//
// RecordOf turns a Status with a location into a Record (location, trigger
// time, reason, job id). Age and YoungerThan measure a Record at now. Flink's
// millisecond timestamps are converted by flinkapi.FromMillis when flinkapi
// decodes them; this package sees only time.Time and time.Duration.
//
// # Schedule
//
// Due says whether a savepoint should be triggered: a user's new request
// token first (ReasonUser), then the periodic interval (ReasonScheduled),
// counted from the job's start, the latest savepoint and the latest
// attempt, or a cron schedule (ParseCron: five fields or @daily and the
// like, in a time zone, daylight saving time handled as ISC cron does),
// whose next time Cron.Next computes as a pure function. A caller that
// was down over several scheduled times finds one savepoint due, not one
// per missed time. Nothing is due while the job is not RUNNING or a
// savepoint is active.
//
// # Retention
//
// History keeps completed savepoints in time order (History.Records);
// Add, Remove, Latest and Lookup read and change it. ChooseDisposals
// picks those to dispose of by maximum count and age, never the newest,
// never one in use, and never an Update or User savepoint unless
// allowed.
//
// A History is a value: no operation changes one a caller holds. A long
// one (64 records or more) that Add or Remove returned still costs O(1)
// amortized per periodic savepoint: Add appends the newest into room at
// the end of its backing array, Remove of the oldest slices them off, and
// Latest, Lookup and ChooseDisposals use an index kept beside the array.
// One decoded from a stored status costs O(n) per Add (a copy) and per
// ChooseDisposals (a check that its records are in time order, each
// location once, which allocates nothing up to 256 records, then no
// sort).
//
// # Stored formats
//
// History is the one type here written by flinkkit and read back by a
// later release (in a Kubernetes status, a file), so it carries its
// format version: FormatVersion, which Add and Remove set to this
// package's FormatVersion. 0 (not written) reads as version 1, and so
// does the bare array of records that releases before format versions
// wrote. A version newer than FormatVersion decodes to a History that
// holds that version alone (a status that embeds it still decodes), and
// History.CheckFormat refuses it with an error matching ErrUnknownFormat
// that names the type and the version: check it where the History is
// used, so that one written by a later flinkkit is never acted on, nor
// written back with its newer parts lost. Golden fixtures of every format
// (testdata/golden) hold every release to reading what the earlier ones
// wrote. A History is written in the form of its version: format 3 (what
// Add and Remove return) is compact, the job, the reason and the
// location prefix most records share written once (a day of periodic
// savepoints every 10 minutes takes about 9 KB instead of 25 KB); formats
// 1 and 2 wrote every record whole.
//
// # Kubernetes
//
// Status, Record, History and Progress are plain data with stable JSON
// names, and have DeepCopy and DeepCopyInto methods (History's copies its
// Records, Record's its RecordExtra), so they can be embedded
// in a custom resource whose deep copies controller-gen generates. Their
// time.Time fields carry markers that let controller-gen's CRD generator
// describe them as date-time strings. History's compact form has fields
// that History does not ("jobID", "reason", "prefix"): its marker makes
// the CRD keep them (x-kubernetes-preserve-unknown-fields). Progress.Fraction is a float, which
// the CRD generator accepts only with crd:allowDangerousTypes=true.
package savepoint
