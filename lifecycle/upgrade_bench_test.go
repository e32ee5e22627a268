package lifecycle

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// The measurements of this file time an upgrade on the fake's clock: from
// its first request to the step that saw the new job RUNNING, against the
// fake's own stop and start (the savepoint's duration and pollStart),
// which a client that knew when Flink is done would take.

// upgradeFigures is what one measured upgrade took and sent, and how late
// it saw the savepoint complete and the new job run.
type upgradeFigures struct {
	took      time.Duration
	requests  int
	savepoint time.Duration // the lag of the savepoint's completion
	running   time.Duration // the lag of the new job's RUNNING
	details   int           // reads of a job's details (GET /jobs/:jobid)
}

// ratio is the upgrade's time as a multiple of the fake's own stop and
// start with a savepoint of d.
func (f upgradeFigures) ratio(d time.Duration) float64 {
	return float64(f.took) / float64(d+pollStart)
}

// upgradeOf reads the figures of an upgrade that took took from the
// fake's requests: the lags are from the savepoint's completion (d after
// the stop) to the last trigger read at or after it, and from the new job
// running to the last status read at or after it.
func upgradeOf(reqs []flinktest.Request, d, took time.Duration) upgradeFigures {
	stopped := firstOf(reqs, routeStop).Add(d)
	running := firstOf(reqs, routeRun).Add(pollStart)
	f := upgradeFigures{took: took, requests: len(reqs), savepoint: lastOf(reqs, routeTriggerState, stopped).Sub(stopped),
		running: lastOf(reqs, routeStatus, running).Sub(running)}
	for _, r := range reqs {
		if r.Route == "GET /jobs/:jobid" {
			f.details++
		}
	}
	return f
}

// measureUpgradeStep upgrades the running job with Upgrade.Step through
// Run, with a savepoint that lasts d: the same work the Controller does,
// the preflight it runs before every upgrade included, and the jar given
// as its upload and the file it was uploaded from (whose upload is
// looked up before the new job runs).
func measureUpgradeStep(tb testing.TB, d time.Duration) upgradeFigures {
	e := pollServer(tb, true, flinktest.WithSavepointDuration(d), flinktest.WithSlots(4))
	jar := filepath.Join(tb.TempDir(), "job.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		tb.Fatal(err)
	}
	start := e.srv.Clock().Now()
	runOp(tb, &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock(), Jars: jarsOf(tb, jar)}, Job: e.job, JarID: e.jar, JarFile: jar,
		Preflight: &PreflightPolicy{}, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}, nil)
	return upgradeOf(e.srv.Requests(), d, e.srv.Clock().Now().Sub(start))
}

// upgradeController deploys the counter job with a Controller on a fake
// whose savepoints last d, until it is stable.
func upgradeController(tb testing.TB, d time.Duration) (*env, *Controller, JobSpec, *JobStatus) {
	tb.Helper()
	e := pollServer(tb, false, flinktest.WithSavepointDuration(d), flinktest.WithSlots(4))
	jar := filepath.Join(tb.TempDir(), "job.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctrl := &Controller{Env: Env{Client: e.c, Clock: e.srv.Clock(), Jars: jarsOf(tb, jar)}, Store: &MemoryStore{}, Name: "app/counter",
		PollInterval: 5 * time.Second, RetryInterval: 20 * time.Second}
	spec := JobSpec{Job: JobTemplate{JarFile: jar, Args: []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)}}
	st := &JobStatus{}
	for range 300 {
		if !st.InFlight() && st.State == policy.Running && st.Deployed.equal(spec.Job) && st.Stable.equal(st.Deployed) {
			return e, ctrl, spec, st
		}
		res, err := ctrl.Reconcile(context.Background(), spec, st)
		if err != nil {
			tb.Fatal(err)
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	tb.Fatalf("the job did not settle: %+v", st)
	return nil, nil, spec, nil
}

// measureUpgradeController upgrades a job the Controller deployed to new
// arguments, with a savepoint that lasts d, calling Reconcile until the
// upgrade ended; the time runs from the first call of the new spec to the
// call that ended it.
func measureUpgradeController(tb testing.TB, d time.Duration) upgradeFigures {
	return upgradeByController(tb, d, false)
}

// upgradeByController is measureUpgradeController, with the status sent
// through JSON after every call if resume is set (a caller that stores it
// and restarts).
func upgradeByController(tb testing.TB, d time.Duration, resume bool) upgradeFigures {
	e, ctrl, spec, st := upgradeController(tb, d)
	spec.Job.Args = slices.Clone(spec.Job.Args)
	spec.Job.Args[1] = "/out2"
	e.srv.ClearRequests()
	start := e.srv.Clock().Now()
	for range 300 {
		res, err := ctrl.Reconcile(context.Background(), spec, st)
		if err != nil {
			tb.Fatal(err)
		}
		if resume {
			b, err := json.Marshal(st)
			if err != nil {
				tb.Fatal(err)
			}
			*st = JobStatus{}
			if err := json.Unmarshal(b, st); err != nil {
				tb.Fatal(err)
			}
		}
		if st.Action == ActionUpgrade && st.Progress.Done() {
			if st.Progress.Outcome != OutcomeSucceeded {
				tb.Fatalf("the upgrade ended %s: %s", st.Progress.Outcome, st.Progress.Reason)
			}
			return upgradeOf(e.srv.Requests(), d, e.srv.Clock().Now().Sub(start))
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	tb.Fatalf("the upgrade did not end: %+v", st)
	return upgradeFigures{}
}

// measureUpgradeBaseline is a client that knows when the fake is done:
// it stops the job, reads the savepoint's trigger once, when it
// completed, runs the new job from it and reads its state once, when it
// runs.
func measureUpgradeBaseline(tb testing.TB, d time.Duration) upgradeFigures {
	e := pollServer(tb, true, flinktest.WithSavepointDuration(d))
	start := e.srv.Clock().Now()
	var tr struct {
		RequestID string `json:"request-id"`
	}
	baselineDo(tb, http.MethodPost, e.srv.URL+"/jobs/"+string(e.job)+"/stop", map[string]any{"drain": false}, &tr)
	e.srv.Clock().Advance(d)
	var sp struct {
		Status struct {
			ID string `json:"id"`
		} `json:"status"`
		Operation struct {
			Location string `json:"location"`
		} `json:"operation"`
	}
	baselineDo(tb, http.MethodGet, e.srv.URL+"/jobs/"+string(e.job)+"/savepoints/"+tr.RequestID, nil, &sp)
	if sp.Status.ID != "COMPLETED" || sp.Operation.Location == "" {
		tb.Fatalf("the savepoint is %s, not completed, after %v", sp.Status.ID, d)
	}
	var run struct {
		JobID string `json:"jobid"`
	}
	baselineDo(tb, http.MethodPost, e.srv.URL+"/jars/"+string(e.jar)+"/run",
		map[string]any{"programArgsList": newArgs(), "savepointPath": sp.Operation.Location}, &run)
	e.srv.Clock().Advance(pollStart)
	var js struct {
		Status string `json:"status"`
	}
	baselineDo(tb, http.MethodGet, e.srv.URL+"/jobs/"+run.JobID+"/status", nil, &js)
	if js.Status != "RUNNING" {
		tb.Fatalf("the new job is %s, not RUNNING, after %v", js.Status, pollStart)
	}
	return upgradeOf(e.srv.Requests(), d, e.srv.Clock().Now().Sub(start))
}

// BenchmarkUpgrade times an upgrade on the fake's clock with a savepoint
// of 1 s and of 10 s: impl=step is Upgrade.Step through Run,
// impl=controller the Controller's Reconcile called at its RequeueAfter,
// impl=baseline the fake's own stop and start (a client that reads each
// answer once, when it is ready). It reports the time (upgrade-s), its
// multiple of the baseline's (x-baseline), the requests sent and how late
// the savepoint and the new job were seen (lag-savepoint-ms,
// lag-running-ms).
//
//	go test -run '^$' -bench Upgrade -count 6 ./lifecycle | benchstat -col /impl -
func BenchmarkUpgrade(b *testing.B) {
	impls := []struct {
		name    string
		measure func(tb testing.TB, d time.Duration) upgradeFigures
	}{{"step", measureUpgradeStep}, {"controller", measureUpgradeController}, {"baseline", measureUpgradeBaseline}}
	for _, d := range []time.Duration{time.Second, 10 * time.Second} {
		for _, impl := range impls {
			b.Run("savepoint="+d.String()+"/impl="+impl.name, func(b *testing.B) {
				var got upgradeFigures
				for b.Loop() {
					got = impl.measure(b, d)
				}
				b.ReportMetric(got.took.Seconds(), "upgrade-s")
				b.ReportMetric(got.ratio(d), "x-baseline")
				b.ReportMetric(float64(got.requests), "requests/op")
				b.ReportMetric(float64(got.savepoint.Milliseconds()), "lag-savepoint-ms")
				b.ReportMetric(float64(got.running.Milliseconds()), "lag-running-ms")
			})
		}
	}
}

// TestUpgradeCounts logs the figures of BenchmarkUpgrade and checks the
// requests, which are deterministic on the fake's clock: an upgrade with a
// 1 s or a 10 s savepoint in 16 requests or fewer through Upgrade.Step and
// through the Controller. Both run the preflight (the old job's details,
// the new job's plan and the cluster's slots) and look the jar's upload up
// before the new job runs, and the Controller sends no more than
// Upgrade.Step: its observation of the job is the read the preflight
// needs. It reads the old job's details once, and takes as
// long, with as many requests and the same lags, when its status goes
// through JSON after every call.
func TestUpgradeCounts(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 10 * time.Second} {
		step, ctrl, base := measureUpgradeStep(t, d), measureUpgradeController(t, d), measureUpgradeBaseline(t, d)
		for _, m := range []struct {
			name string
			f    upgradeFigures
		}{{"step", step}, {"controller", ctrl}, {"baseline", base}} {
			t.Logf("savepoint %v %-10s %v (%.2fx) %d requests, savepoint seen %v late, job %v", d, m.name, m.f.took, m.f.ratio(d),
				m.f.requests, m.f.savepoint, m.f.running)
		}
		for _, m := range []struct {
			name string
			n    int
			most int
		}{{"Upgrade.Step", step.requests, 16}, {"the Controller", ctrl.requests, 16}} {
			if m.n > m.most {
				t.Errorf("%s sent %d requests for an upgrade with a %v savepoint, more than %d", m.name, m.n, d, m.most)
			}
		}
		if ctrl.details != 1 {
			t.Errorf("the Controller's upgrade with a %v savepoint read the job's details %d times, want once", d, ctrl.details)
		}
		if resumed := upgradeByController(t, d, true); resumed != ctrl {
			t.Errorf("with a %v savepoint, a Controller whose status goes through JSON: %+v, one whose status does not: %+v", d, resumed, ctrl)
		}
		if ctrl.requests > step.requests {
			t.Errorf("the Controller's upgrade with a %v savepoint sent %d requests, more than Upgrade.Step's %d with the same preflight",
				d, ctrl.requests, step.requests)
		}
	}
}
