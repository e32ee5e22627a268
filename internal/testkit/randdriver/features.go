package randdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// settleCalls bounds the calls that let the last action of a run end
// before the ledger is checked.
const settleCalls = 40

// settleLateCalls bounds the calls that let a late savepoint's lookup
// (lifecycle.LateSavepoint) end: it ends at the latest a checkpoint
// timeout (10 minutes) and a minute after its trigger.
const settleLateCalls = 200

// retention draws a retention of the savepoint history into spec:
// MaxCount or MaxAge, which savepoints may go, and whether a Delete
// disposes of them; with periodic savepoints, most of the time, so that
// there is something to dispose of.
func (d *driver) retention(spec *lifecycle.JobSpec) {
	r := d.r
	p := &spec.Savepoints
	p.MaxCount, p.MaxAge = 0, 0
	switch r.IntN(3) {
	case 0, 1:
		p.MaxCount = 1 + r.IntN(2)
	default:
		p.MaxAge = policy.Duration(time.Duration(5+r.IntN(16)) * time.Minute)
	}
	p.DisposeUpdate, p.DisposeUser, p.DisposeOnDelete = r.IntN(2) == 0, r.IntN(3) == 0, r.IntN(3) == 0
	if p.Interval == 0 && r.IntN(3) != 0 {
		p.Interval = policy.Duration(time.Duration(1+r.IntN(4)) * time.Minute)
	}
}

// setName sets the spec's --name to v<n> and notes the build of the jar
// at the spec's path then: the build the template runs.
func (d *driver) setName(n int) {
	d.spec.Job.Args = withName(d.spec.Job.Args, n)
	d.buildOfName["v"+strconv.Itoa(n)] = d.fileBuild
}

// token is a new token of a one-shot request or restore request.
func (d *driver) token(kind string) string { return fmt.Sprintf("%s%d", kind, len(d.res.Trace)) }

// request asks for a one-shot action by a new token (JobSpec.Requests).
func (d *driver) request() {
	rq := &d.spec.Requests
	var kind string
	switch d.r.IntN(4) {
	case 0:
		kind, rq.Savepoint = "savepoint", d.token("s")
	case 1:
		kind, rq.Checkpoint = "checkpoint", d.token("c")
	case 2:
		kind, rq.Restart = "restart", d.token("x")
	default:
		kind, rq.Rollback = "rollback", d.token("b")
	}
	d.res.Seen["one-shot requests"]++
	d.tracef("event: spec: %s request %+v", kind, *rq)
}

// importSavepoint has the caller import a savepoint into its stored
// status (JobStatus.ImportSavepoint): one on the fake's disk, of any job,
// with a random OnDelete.
func (d *driver) importSavepoint() {
	var sps []savepoint.Record
	for _, s := range d.srv.Snapshots() {
		if s.Savepoint && !s.Removed {
			sps = append(sps, savepoint.Record{Location: s.Location, Time: s.Taken, JobID: s.Job})
		}
	}
	if len(sps) == 0 {
		return
	}
	rec := sps[d.r.IntN(len(sps))]
	rec.SetOnDelete([]savepoint.OnDelete{savepoint.OnDeletePolicy, savepoint.OnDeleteKeep, savepoint.OnDeleteDispose}[d.r.IntN(3)])
	st := d.status()
	err := st.ImportSavepoint(rec)
	d.tracef("event: the caller imports savepoint %s (taken %v, job %s, onDelete %q) into its status: %v", rec.Location, d.rel(rec.Time), rec.JobID, rec.OnDelete(), err)
	if err != nil {
		return
	}
	d.stored, _ = json.Marshal(st)
	d.res.Seen["savepoints imported"]++
}

// changeRetention draws a new retention, or none.
func (d *driver) changeRetention() {
	if d.r.IntN(3) == 0 {
		d.spec.Savepoints.MaxCount, d.spec.Savepoints.MaxAge = 0, 0
	} else {
		d.retention(&d.spec)
	}
	p := d.spec.Savepoints
	d.tracef("event: spec: retention maxCount %d maxAge %v disposeUpdate %v disposeUser %v disposeOnDelete %v, interval %v",
		p.MaxCount, p.MaxAge.Std(), p.DisposeUpdate, p.DisposeUser, p.DisposeOnDelete, p.Interval.Std())
}

// userJob has a user start the spec's job through the REST API, beside
// the controller, with retained checkpoints or without: a job to adopt.
func (d *driver) userJob(ctx context.Context, retained bool) flinkapi.JobID {
	d.newRequests()
	defer d.newRequests()
	jar, err := d.user.UploadJarReader(ctx, "job.jar", bytes.NewReader(jarBytes(d.fileBuild)))
	if err != nil {
		d.tracef("event: user: jar upload: %v", err)
		return ""
	}
	d.jarBuild[jar] = d.fileBuild
	conf := map[string]string{}
	if retained {
		conf["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
	}
	id := flinkapi.NewJobID()
	_, err = d.user.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: d.spec.Job.Args, Parallelism: d.spec.Job.Parallelism, FlinkConfiguration: conf})
	d.tracef("event: user: runs job %s through the REST API (retained checkpoints %v): %v", id, retained, err)
	j, ok := d.srv.Job(id)
	if !ok {
		return ""
	}
	// A run whose answer was lost may have started the job all the same.
	d.foreign[id] = "user"
	d.submitted[id] = j.Submitted
	if err != nil {
		return ""
	}
	return id
}

// adoptUserJob has a user start a job through the REST API and the spec
// adopt it (JobSpec.Adopt), after it ran a while.
func (d *driver) adoptUserJob(ctx context.Context) {
	retained := d.r.IntN(2) == 0
	id := d.userJob(ctx, retained)
	if id == "" {
		return
	}
	d.srv.Clock().Advance(time.Duration(5+d.r.IntN(60)) * time.Second)
	d.spec.Adopt = id
	d.res.Seen["adoptions asked"]++
	if retained {
		d.res.Seen["adoptions of jobs with retained checkpoints"]++
	}
	d.tracef("event: spec: adopt %s", id)
}

// afterCall follows the new features after a call whose status was
// stored: adoptions, detached jobs, an adoption that failed (the user
// then removes Adopt).
func (d *driver) afterCall(st lifecycle.JobStatus, res lifecycle.Result) {
	if id := st.JobID; id != "" && d.foreign[id] != "" && d.spec.Adopt == id {
		delete(d.foreign, id)
		delete(d.detached, id)
		d.res.Seen["jobs adopted"]++
	}
	if d.spec.Adopt != "" && st.Reason == lifecycle.ReasonAdoptFailed {
		d.tracef("event: spec: the adoption failed (%s); the user removes Adopt", st.Message)
		d.spec.Adopt = ""
	}
	if d.deleting && res.Done && st.Detached != "" && st.Detached == st.JobID {
		if j, ok := d.srv.Job(st.Detached); ok && !j.State.IsGloballyTerminal() {
			d.detached[st.Detached] = true
			d.detachedRun[st.Detached] = d.submitted[st.Detached]
			d.foreign[st.Detached] = "detached"
			d.res.Seen["jobs detached"]++
		}
	}
}

// detachDelete deletes the deployment under DeleteDetach: its job is
// left running.
func (d *driver) detachDelete() {
	d.spec.OnDelete = lifecycle.DeleteDetach
	d.deleting = true
	d.tracef("event: delete (onDelete Detach): the caller calls Delete from now on")
}

// ownLive are the jobs of the deployment that have not ended: the live
// jobs of the fake but the foreign ones.
func (d *driver) ownLive() map[flinkapi.JobID]flinkapi.JobState {
	out := liveJobs(d.srv)
	for id := range d.foreign {
		delete(out, id)
	}
	return out
}

// foreignLive reports whether a foreign job lives (it holds slots).
func (d *driver) foreignLive() bool {
	for id := range d.foreign {
		if j, ok := d.srv.Job(id); ok && !j.State.IsGloballyTerminal() {
			return true
		}
	}
	return false
}

// cancelForeign has a user cancel a foreign job that lives.
func (d *driver) cancelForeign(ctx context.Context) bool {
	for id := range d.foreign {
		if j, ok := d.srv.Job(id); ok && !j.State.IsGloballyTerminal() {
			err := d.user.CancelJob(ctx, id)
			d.tracef("event: user: cancel %s job %s: %v", d.foreign[id], id, err)
			return true
		}
	}
	return false
}

// settle calls the controller, without disturbances, until no action is
// in flight, no audit is owed and a Delete is done, and then checks the
// ledger.
func (d *driver) settle(ctx context.Context) {
	d.loseNext = ""
	for i := 0; !d.deleted; i++ {
		st := d.status()
		late := st.LateSavepoint.Pending()
		// An audit the last action owes (one that ended without its
		// savepoint) runs at the next call: the ledger is checked after.
		due := st.Audit != nil && st.Audit.Due
		if !st.InFlight() && st.Disposing.Location == "" && !d.deleting && !late && !due || i >= settleCalls && (!late || i >= settleLateCalls) {
			break
		}
		d.call(ctx)
	}
	if st := d.status(); !d.deleted && !st.InFlight() {
		d.checkLedger(ctx, st)
	}
}
