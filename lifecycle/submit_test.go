package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

func TestSubmit(t *testing.T) {
	tests := []struct {
		name    string
		upload  bool // upload the jar file instead of reusing the uploaded jar
		restore bool // start from a savepoint of the running job
		badPath bool
		faults  []flinktest.Fault
		outcome Outcome
		runs    int // jar run requests expected; -1: any
	}{
		{name: "reuse jar", outcome: OutcomeSucceeded, runs: 1},
		{name: "upload jar", upload: true, outcome: OutcomeSucceeded, runs: 1},
		{
			name: "upload fails with 503 once", upload: true, outcome: OutcomeSucceeded, runs: 1,
			faults: []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jars/upload", Times: 1}},
		},
		{name: "from a savepoint", restore: true, outcome: OutcomeSucceeded, runs: 1},
		{
			name: "run answer lost after the job was submitted", outcome: OutcomeSucceeded, runs: 1,
			faults: []flinktest.Fault{{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 1, After: true}},
		},
		{
			name: "run refused with 503: submitted again", outcome: OutcomeSucceeded, runs: 3,
			faults: []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jars/:jarid/run", Times: 2}},
		},
		{
			name: "run and look-up fail", outcome: OutcomeSucceeded, runs: -1,
			faults: []flinktest.Fault{
				{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 2, After: true},
				{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid", Times: 2},
			},
		},
		{name: "savepoint path names no savepoint", badPath: true, outcome: OutcomeSubmitFailed, runs: 1},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			name := tt.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				ctx := context.Background()
				var restoreFrom string
				var before int64
				if tt.restore {
					p, _ := drive(t, e, func() Stepper {
						return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
					}, false)
					restoreFrom = p.Savepoint.Location
					info, _ := e.srv.Job(e.job)
					before = info.Events
					e.srv.ClearRequests()
				}
				if tt.badPath {
					restoreFrom = "file:/tmp/flinktest/savepoints/savepoint-000000-000000000000"
				}
				for _, f := range tt.faults {
					e.inject(t, f)
				}
				jarFile, jars := "", (*Jars)(nil)
				if tt.upload {
					jarFile = writeJar(t)
					jars = jarsOf(t, jarFile)
				}
				mk := func() Stepper {
					s := &Submit{Env: Env{Client: e.c, Timing: Timing{Submit: time.Minute}, Clock: e.srv.Clock()}, JarFile: jarFile, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs(), SavepointPath: restoreFrom}}
					if !tt.upload {
						s.JarID = e.jar
					} else {
						s.Jars = jars
					}
					return s
				}
				p, res := drive(t, e, mk, resume)
				t.Logf("%s after %d steps: %s", res.Outcome, p.Steps, p.Reason)
				if res.Outcome != tt.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, p.Reason, tt.outcome)
				}
				if n := count(e.srv, "POST /jars/:jarid/run"); tt.runs >= 0 && n != tt.runs {
					t.Errorf("%d jar runs, want %d: %v", n, tt.runs, routes(e.srv))
				}
				if tt.upload {
					if n := count(e.srv, "POST /jars/upload"); n != 1+len(tt.faults) {
						t.Errorf("%d uploads", n)
					}
				}
				// Exactly one job with the recorded id, besides the first one.
				var ours int
				for _, j := range e.srv.Jobs() {
					if j.ID == p.JobID {
						ours++
					} else if j.ID != e.job {
						t.Errorf("unexpected job %s", j.ID)
					}
				}
				if ours != 1 {
					t.Errorf("%d jobs with id %s, want 1", ours, p.JobID)
				}
				if tt.outcome != OutcomeSucceeded {
					return
				}
				st, err := e.c.JobStatus(ctx, p.JobID)
				if err != nil || st != flinkapi.JobRunning {
					t.Errorf("job %s is %s, %v", p.JobID, st, err)
				}
				if tt.restore {
					e.srv.Clock().Advance(5 * time.Second)
					info, _ := e.srv.Job(p.JobID)
					if info.RestoredFrom != restoreFrom || info.Events <= before {
						t.Errorf("restored from %q with %d events; want %q and more than %d", info.RestoredFrom, info.Events, restoreFrom, before)
					}
				}
			})
		}
	}
}

func TestSubmitResumeEqualsRun(t *testing.T) {
	var got [2][]string
	var prog [2]Progress
	for i, resume := range []bool{false, true} {
		e := newEnv(t)
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 1, After: true})
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid", Times: 1})
		id := flinkapi.JobID("0123456789abcdef0123456789abcdef")
		mk := func() Stepper {
			return &Submit{Env: Env{Client: e.c, Clock: e.srv.Clock()}, JarID: e.jar, JobID: id, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}}
		}
		prog[i], _ = drive(t, e, mk, resume)
		got[i] = routes(e.srv)
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("requests differ:\nrun:     %v\nresumed: %v", got[0], got[1])
	}
	if prog[0] != prog[1] || prog[0].Outcome != OutcomeSucceeded {
		t.Errorf("progress differs:\nrun:     %+v\nresumed: %+v", prog[0], prog[1])
	}
}

// failingCluster is a client whose jobs fail before they run, with an
// exception history.
type failingCluster struct {
	API
	exceptionReads int
}

func (f *failingCluster) RunJar(context.Context, flinkapi.JarID, flinkapi.RunJarRequest) (flinkapi.JobID, error) {
	return "", nil
}

func (f *failingCluster) JobStatus(context.Context, flinkapi.JobID) (flinkapi.JobState, error) {
	return flinkapi.JobFailed, nil
}

func (f *failingCluster) JobExceptions(context.Context, flinkapi.JobID, int) (*flinkapi.JobExceptions, error) {
	f.exceptionReads++
	return &flinkapi.JobExceptions{Entries: []flinkapi.ExceptionEntry{{
		ExceptionName: "org.apache.flink.runtime.client.JobInitializationException",
		Message:       "Could not start the JobMaster.",
		StackTrace: "org.apache.flink.runtime.client.JobInitializationException: Could not start the JobMaster.\n\tat x.y(Z.java:1)\n" +
			"Caused by: java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory 'file:/sp/x' on file system 'file'.\n\tat a.b(C.java:2)\n",
	}}}, nil
}

// TestSubmitJobFailedExplainsWhy checks that a job failing before it runs
// ends JobFailed with the root cause of its newest exception, read in one
// more step.
func TestSubmitJobFailedExplainsWhy(t *testing.T) {
	f := &failingCluster{}
	op := &Submit{Env: Env{Client: f, Clock: flinktest.NewClock(time.Unix(0, 0))}, JarID: "j.jar"}
	var p Progress
	res, err := Run(context.Background(), op, &p, nil)
	if err != nil || res.Outcome != OutcomeJobFailed {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := "the job is FAILED before it ran: Cannot find checkpoint or savepoint file/directory 'file:/sp/x' on file system 'file'."
	if p.Reason != want || f.exceptionReads != 1 {
		t.Errorf("reason %q after %d reads, want %q", p.Reason, f.exceptionReads, want)
	}
}
