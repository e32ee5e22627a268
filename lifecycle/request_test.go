package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// olderSavepoint takes a savepoint of e's job, lets the job count on, and
// returns the savepoint's location and the events it holds.
func olderSavepoint(t *testing.T, e *env) (string, int64) {
	t.Helper()
	p, _ := drive(t, e, func() Stepper { return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }, false)
	if p.Outcome != OutcomeSucceeded || p.Savepoint.Location == "" {
		t.Fatalf("savepoint: %+v", p)
	}
	info, _ := e.srv.Job(e.job)
	e.srv.Clock().Advance(30 * time.Second)
	e.srv.ClearRequests()
	return p.Savepoint.Location, info.Events
}

// TestUpgradeRestoreRequest carries out restore requests against the fake
// JobManager, uninterrupted and resumed after every step: a running job is
// stopped with a savepoint (kept as Progress.Savepoint.Location), the new job starts
// from the requested, older savepoint with the state it holds, and the
// token is handled once.
func TestUpgradeRestoreRequest(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(map[bool]string{false: "run", true: "resumed"}[resume], func(t *testing.T) {
			e := newEnv(t)
			path, events := olderSavepoint(t, e)
			before, _ := e.srv.Job(e.job)
			if before.Events <= events {
				t.Fatalf("the job did not count on: %d then %d", events, before.Events)
			}
			req := policy.RestoreRequest{Path: path, Token: "rollback-1"}
			mk := func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Timing: Timing{Poll: time.Second}, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()},
					Restore: req}
			}
			p, res := checkedDrive(t, e, mk, resume, false)
			if res.Outcome != OutcomeSucceeded {
				t.Fatalf("outcome %s: %s", res.Outcome, p.Reason)
			}
			if p.Replace.Decision != policy.ReasonRestoreRequested && p.Replace.Decision != policy.ReasonSavepointBeforeRestore {
				t.Errorf("decision %s", p.Replace.Decision)
			}
			if p.Savepoint.Location == "" || p.Savepoint.Location == path {
				t.Errorf("the running job's own savepoint was not kept: location %q", p.Savepoint.Location)
			}
			if p.Replace.RestoreFrom != path || p.Replace.Request != req {
				t.Errorf("restore from %q, request %+v", p.Replace.RestoreFrom, p.Replace.Request)
			}
			if got := p.HandledRestore(); got != "rollback-1" {
				t.Errorf("HandledRestore = %q", got)
			}
			newJob, ok := e.srv.Job(p.JobID)
			if !ok || newJob.RestoredFrom != path || newJob.State != flinkapi.JobRunning {
				t.Fatalf("new job %+v", newJob)
			}
			if newJob.Events > events+int64(time.Second/time.Millisecond) {
				// The fake counts from the savepoint's events on.
				t.Errorf("new job starts at %d events, the requested savepoint holds %d", newJob.Events, events)
			}
			old, _ := e.srv.Job(e.job)
			if old.State != flinkapi.JobFinished {
				t.Errorf("old job %s, want FINISHED (stopped with a savepoint)", old.State)
			}
			if ids, _ := triggerIDs(t, e.srv); len(ids) != 1 {
				t.Errorf("trigger ids %v", ids)
			}
			if n := jobsWithID(e, p.JobID); n != 1 {
				t.Errorf("%d jobs with id %s", n, p.JobID)
			}

			// The same request again, recorded as handled, with a spec
			// change: the usual update, from the job's own savepoint.
			e.srv.Clock().Advance(10 * time.Second)
			var again Progress
			up := &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: p.JobID, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()},
				Restore: req, RestoreHandled: p.HandledRestore()}
			if _, err := Run(context.Background(), up, &again, nil); err != nil {
				t.Fatal(err)
			}
			if again.Outcome != OutcomeSucceeded || again.Replace.Decision != policy.ReasonSavepointBeforeUpdate ||
				!again.Replace.Request.IsZero() || again.Replace.RestoreFrom == path || again.Replace.RestoreFrom != again.Savepoint.Location || again.HandledRestore() != "" {
				t.Errorf("handled request replayed: %+v", again)
			}
		})
	}
}

// TestUpgradeRestoreRequestFailedJob restores a failed job from the
// requested path without a savepoint, and with the request's
// allowNonRestoredState.
func TestUpgradeRestoreRequestFailedJob(t *testing.T) {
	e := newEnv(t)
	path, _ := olderSavepoint(t, e)
	if err := e.srv.FailJob(e.job, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	req := policy.RestoreRequest{Path: path, Token: "t", AllowNonRestoredState: true}
	p, res := checkedDrive(t, e, func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}, Restore: req}
	}, true, false)
	if res.Outcome != OutcomeSucceeded || p.Replace.RestoreFrom != path || p.Savepoint.Location != "" || p.Replace.Decision != policy.ReasonRestoreRequested {
		t.Fatalf("progress %+v", p)
	}
	if ids, _ := triggerIDs(t, e.srv); len(ids) != 0 {
		t.Errorf("a failed job got savepoint triggers %v", ids)
	}
	var body string
	for _, r := range e.srv.Requests() {
		if r.Route == "POST /jars/:jarid/run" {
			body = r.Body
		}
	}
	if !strings.Contains(body, `"allowNonRestoredState":true`) || !strings.Contains(body, path) {
		t.Errorf("jar run body %s", body)
	}
}

// TestUpgradeRestoreRequestBadPath checks that a path Flink cannot restore
// ends the upgrade (SubmitFailed, as the jar run reports the failure, or
// JobFailed) with Flink's message, once, and that the
// request then counts as handled: no retry loop.
func TestUpgradeRestoreRequestBadPath(t *testing.T) {
	e := newEnv(t)
	if err := e.srv.FailJob(e.job, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	req := policy.RestoreRequest{Path: "file:///nowhere/savepoint-0", Token: "t"}
	p, res := drive(t, e, func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Timing: Timing{Poll: time.Second}, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}, Restore: req}
	}, true)
	if (res.Outcome != OutcomeJobFailed && res.Outcome != OutcomeSubmitFailed) || !strings.Contains(p.Reason, "Cannot find checkpoint or savepoint") {
		t.Fatalf("outcome %s: %s", res.Outcome, p.Reason)
	}
	if p.HandledRestore() != "t" {
		t.Errorf("HandledRestore = %q", p.HandledRestore())
	}
	if n := count(e.srv, "POST /jars/:jarid/run"); n != 1 {
		t.Errorf("%d jar runs", n)
	}
}

// TestUpgradeRestoreRequestRefused checks the requests the policy refuses:
// nothing is sent beyond the observation, and the refusal is final.
func TestUpgradeRestoreRequestRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     policy.RestoreRequest
		reason  policy.Reason
		handled string
	}{
		{"no token", policy.RestoreRequest{Path: "file:///sp/1"}, policy.ReasonInvalidRestoreRequest, ""},
		{"too old", policy.RestoreRequest{Path: "file:///sp/1", Token: "x", CheckAge: true, Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}, policy.ReasonRestoreRequestTooOld, "x"},
		{"age unknown", policy.RestoreRequest{Path: "file:///sp/1", Token: "y", CheckAge: true}, policy.ReasonRestoreRequestAgeUnknown, "y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p, res := drive(t, e, func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Restore: tc.req}
			}, true)
			if res.Outcome != OutcomeBlocked || p.Replace.Decision != tc.reason {
				t.Fatalf("outcome %s, decision %s: %s", res.Outcome, p.Replace.Decision, p.Reason)
			}
			if p.HandledRestore() != tc.handled {
				t.Errorf("HandledRestore = %q, want %q", p.HandledRestore(), tc.handled)
			}
			for _, r := range e.srv.Requests() {
				if r.Method != "GET" {
					t.Errorf("request sent: %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

// TestUpgradeRestoreRequestSavepointFails checks that a request whose
// savepoint fails leaves the job running and the request pending.
func TestUpgradeRestoreRequestSavepointFails(t *testing.T) {
	e := newEnv(t)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultSavepointFails, Cause: "java.io.IOException: disk full"})
	req := policy.RestoreRequest{Path: "file:///sp/1", Token: "t"}
	p, res := checkedDrive(t, e, func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Restore: req}
	}, true, false)
	if res.Outcome != OutcomeBlocked || p.Replace.Decision != policy.ReasonSavepointFailed {
		t.Fatalf("outcome %s, decision %s: %s", res.Outcome, p.Replace.Decision, p.Reason)
	}
	if job, _ := e.srv.Job(e.job); job.State != flinkapi.JobRunning {
		t.Errorf("job %s", job.State)
	}
	if p.HandledRestore() != "" || count(e.srv, "POST /jars/:jarid/run") != 0 {
		t.Errorf("handled %q, jar runs %d", p.HandledRestore(), count(e.srv, "POST /jars/:jarid/run"))
	}
}
