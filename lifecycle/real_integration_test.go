//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// countsTimeout bounds each wait for the test job's counts.
const countsTimeout = 90 * time.Second

// TestRealCluster takes a savepoint, stops the test job with a savepoint
// and submits it again from there on a real Flink session cluster of
// FLINK_VERSION (or the one at FLINK_URL), and checks that each key's
// count continues:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v ./lifecycle/
func TestRealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	timing := lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}
	const keys, minCount = 3, 40
	args := func(out string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "1000", "--name", "lifecycle-test"}
	}
	run := func(t *testing.T, what string, op lifecycle.Stepper) lifecycle.Progress {
		t.Helper()
		var p lifecycle.Progress
		begin := time.Now()
		res, err := lifecycle.Run(ctx, op, &p, nil)
		t.Logf("%s: %s in %v after %d steps: %s", what, res.Outcome, time.Since(begin).Round(time.Millisecond), p.Steps, p.Reason)
		if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("%s: %+v, %v; progress %+v", what, res, err, p)
		}
		return p
	}

	// Submit uploads the jar and starts the job with a recorded job id.
	out1 := cluster.OutDir("lifecycle-first")
	sub := run(t, "Submit", &lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing, Jars: testJars()}, JarFile: cluster.TestJobJar, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out1)}})
	job := sub.JobID
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= minCount })

	sp := run(t, "TakeSavepoint", &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: c, Timing: timing}, Job: job})
	if !flinkfixture.LocationExists(sp.Savepoint.Location) {
		t.Errorf("savepoint %s does not exist", sp.Savepoint.Location)
	}
	if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobRunning {
		t.Errorf("after TakeSavepoint the job is %s, %v", st, err)
	}

	strategy, err := lifecycle.ChooseStopStrategy(v, "", "")
	if err != nil || strategy != lifecycle.StopWithSavepoint {
		t.Fatalf("ChooseStopStrategy(%s) = %s, %v", v, strategy, err)
	}
	stop := run(t, "Stop", &lifecycle.Stop{Env: lifecycle.Env{Client: c, Timing: timing}, Job: job})
	if !flinkfixture.LocationExists(stop.Savepoint.Location) || stop.Savepoint.Location == sp.Savepoint.Location {
		t.Errorf("stop savepoint %s does not exist or is the first one", stop.Savepoint.Location)
	}
	if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobFinished {
		t.Errorf("after Stop the job is %s, %v", st, err)
	}
	c1, err := flinkfixture.ReadCounts(out1)
	if err != nil || len(c1) != keys {
		t.Fatalf("counts at the stop %v, %v", c1, err)
	}
	t.Logf("counts at the stop: %s", format(c1))

	// Submitting from the stop's savepoint reuses the uploaded jar; the
	// counts continue.
	out2 := cluster.OutDir("lifecycle-restored")
	again := run(t, "Submit from savepoint", &lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing}, JarID: sub.Submit.JarID, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2), SavepointPath: stop.Savepoint.Location}})
	if again.JobID == job {
		t.Errorf("the restored job has the first job's id")
	}
	countsContinue(t, ctx, out2, keys, c1, 5)

	// A retried Submit with the same progress does not start a second job.
	p := again
	p.Phase, p.Outcome, p.Requests = lifecycle.PhaseSubmit, "", 1
	res, err := (&lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing}, JarID: sub.Submit.JarID}).Step(ctx, &p)
	if err != nil || p.Phase != lifecycle.PhaseWaitRunning {
		t.Errorf("resubmit look-up: %+v, %v; progress %+v", res, err, p)
	}
	all, err := c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []flinkapi.JobIDStatus
	for _, j := range all {
		if !cluster.ExistedBefore(string(j.ID)) { // the jobs of this test
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 2 {
		t.Errorf("jobs %+v, want the stopped one and the restored one", jobs)
	}

	// Savepoint then cancel, and cancel with savepoint of a job restored
	// from that savepoint.
	stc := run(t, "Stop (savepoint then cancel)", &lifecycle.Stop{Env: lifecycle.Env{Client: c, Timing: timing}, Job: again.JobID, Strategy: lifecycle.SavepointThenCancel})
	if st, err := c.JobStatus(ctx, again.JobID); err != nil || st != flinkapi.JobCanceled || !flinkfixture.LocationExists(stc.Savepoint.Location) {
		t.Errorf("after savepoint then cancel the job is %s, %v; savepoint %s", st, err, stc.Savepoint.Location)
	}
	out3 := cluster.OutDir("lifecycle-third")
	third := run(t, "Submit from savepoint", &lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing}, JarID: sub.Submit.JarID, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out3), SavepointPath: stc.Savepoint.Location}})
	// A job is RUNNING before its tasks are: Flink refuses a savepoint
	// until they run, and the stop triggers again until it is taken.
	cws := run(t, "Stop (cancel with savepoint)", &lifecycle.Stop{Env: lifecycle.Env{Client: c, Timing: timing}, Job: third.JobID, Strategy: lifecycle.CancelWithSavepoint})
	if st, err := c.JobStatus(ctx, third.JobID); err != nil || st != flinkapi.JobCanceled || !flinkfixture.LocationExists(cws.Savepoint.Location) {
		t.Errorf("after cancel with savepoint the job is %s, %v; savepoint %s", st, err, cws.Savepoint.Location)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// countsContinue checks that the first counts the test job writes to dir
// are at least those of before (the state was restored, not started from
// zero), and that every key then grows more than grow past them.
func countsContinue(t *testing.T, ctx context.Context, dir string, keys int, before map[string]int64, grow int64) {
	t.Helper()
	first := map[string]int64{}
	flinkfixture.WaitCounts(t, ctx, dir, keys, countsTimeout, func(k string, n int64) bool {
		if _, ok := first[k]; !ok {
			first[k] = n
		}
		return true
	})
	for k, n := range before {
		if first[k] < n {
			t.Errorf("key %s: first count %d after the restore, want >= %d: the state was not restored", k, first[k], n)
		}
	}
	later := flinkfixture.WaitCounts(t, ctx, dir, keys, countsTimeout, func(k string, n int64) bool { return n > before[k]+grow })
	t.Logf("counts: before %s, first %s, later %s", format(before), format(first), format(later))
}

func format(m map[string]int64) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// logUpgradeTiming logs the upgrade's time against the time Flink itself
// spent, by Flink's own timestamps: the stop (from the savepoint's trigger
// to the old job FINISHED, which includes the savepoint's end-to-end
// duration) and the new job (from the jar run request until Flink
// answered it and the job was RUNNING). The rest is flinkkit's: its
// requests and the waits between its polls.
func logUpgradeTiming(t *testing.T, ctx context.Context, c *flinkapi.Client, version string, old flinkapi.JobID, up lifecycle.Progress,
	begin time.Time, total time.Duration, submitAt, answeredAt time.Time) {
	t.Helper()
	// Flink caches checkpoint statistics for a few seconds: ask until they
	// show the stop's savepoint.
	var stats *flinkapi.CheckpointStatistics
	var err error
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		stats, err = c.Checkpoints(ctx, old)
		if err == nil && stats.LatestSavepoint != nil && stats.LatestSavepoint.ExternalPath == up.Savepoint.Location {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("checkpoint statistics of the old job: %+v, %v", stats, err)
		}
	}
	sp := stats.LatestSavepoint
	// The job details are cached too.
	var oldJob *flinkapi.JobDetails
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		oldJob, err = c.Job(ctx, old)
		if err == nil && oldJob.State == flinkapi.JobFinished {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("old job: %+v, %v", oldJob, err)
		}
	}
	newJob, err := c.Job(ctx, up.JobID)
	if err != nil || newJob.Timestamps[flinkapi.JobRunning].IsZero() {
		t.Fatalf("new job: %+v, %v", newJob, err)
	}
	stop := oldJob.Timestamps[flinkapi.JobFinished].Sub(sp.TriggerTime)
	start := answeredAt
	if r := newJob.Timestamps[flinkapi.JobRunning]; r.After(start) {
		start = r
	}
	flink := stop + start.Sub(submitAt)
	rel := func(x time.Time) time.Duration { return x.Sub(begin).Round(time.Millisecond) }
	t.Logf("UPGRADE TIMING (Flink %s): total %v; Flink's own %v = stop with savepoint %v (savepoint end to end %v) + new job %v (jar run answered after %v, RUNNING after %v); flinkkit's %v; ratio %.2f",
		version, total.Round(time.Millisecond), flink.Round(time.Millisecond), stop, sp.EndToEndDuration, start.Sub(submitAt).Round(time.Millisecond),
		answeredAt.Sub(submitAt).Round(time.Millisecond), newJob.Timestamps[flinkapi.JobRunning].Sub(submitAt).Round(time.Millisecond),
		(total - flink).Round(time.Millisecond), float64(total)/float64(flink))
	t.Logf("UPGRADE TIMING (Flink %s): against the savepoint's end to end %v + the new job %v: ratio %.2f",
		version, sp.EndToEndDuration, start.Sub(submitAt).Round(time.Millisecond), float64(total)/float64(sp.EndToEndDuration+start.Sub(submitAt)))
	t.Logf("upgrade timeline: savepoint triggered %v, old job FINISHED %v, jar run sent %v, answered %v, new job RUNNING %v, done %v",
		rel(sp.TriggerTime), rel(oldJob.Timestamps[flinkapi.JobFinished]), rel(submitAt), rel(answeredAt), rel(newJob.Timestamps[flinkapi.JobRunning]), total.Round(time.Millisecond))
}

// TestRealClusterUpgrade upgrades the test job with a stop with savepoint
// (new arguments, the counter continues), restarts a failed job from its
// latest retained checkpoint, tears a job down into a restore-point store
// and redeploys it by name (the counter continues), on a real Flink
// session cluster of FLINK_VERSION. It logs each upgrade's total time
// against the time Flink itself spent (see logUpgradeTiming).
func TestRealClusterUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	timing := lifecycle.Timing{Poll: 50 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}
	const keys = 3
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	args := func(out string, extra ...string) []string {
		return append([]string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "500", "--name", "lifecycle-upgrade"}, extra...)
	}
	run := func(t *testing.T, what string, op lifecycle.Stepper, want lifecycle.Outcome) lifecycle.Progress {
		t.Helper()
		var p lifecycle.Progress
		begin := time.Now()
		res, err := lifecycle.Run(ctx, op, &p, nil)
		t.Logf("%s: %s in %v after %d steps (%s): %s", what, res.Outcome, time.Since(begin).Round(time.Millisecond), p.Steps, p.Replace.Decision, p.Reason)
		if err != nil || res.Outcome != want {
			t.Fatalf("%s: %+v, %v; progress %+v", what, res, err, p)
		}
		return p
	}

	// Deploy, then upgrade with a stop with savepoint to new arguments.
	out1 := cluster.OutDir("upgrade-first")
	first := run(t, "Deploy", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing, Jars: testJars()}, FirstDeploy: true, JarFile: cluster.TestJobJar, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out1), FlinkConfiguration: retain}}, lifecycle.OutcomeSucceeded)
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 20 })

	// Five upgrades in a row, each timed; the counter continues across
	// each of them. The third starts a job whose snapshots take a second
	// more, as those of a large state do (without periodic checkpoints,
	// which would take as long), so the last two are timed with a
	// savepoint of over a second.
	prev, prevOut := first, out1
	var up lifecycle.Progress
	var out2 string
	for i := range 5 {
		out2 = cluster.OutDir(fmt.Sprintf("upgrade-%d", i+2))
		var extra []string
		if i >= 2 {
			extra = []string{"--checkpoint-interval", "0", "--snapshot-delay", "1000"}
		}
		var submitAt, answeredAt time.Time
		var phases []string
		begin := time.Now()
		hook := func(tr lifecycle.Transition) {
			phases = append(phases, fmt.Sprintf("%s@%v", tr.To, time.Since(begin).Round(time.Millisecond)))
			switch tr.To {
			case lifecycle.PhaseSubmit:
				submitAt = time.Now() // the jar run is sent next, at once
			case lifecycle.PhaseWaitRunning:
				answeredAt = time.Now()
			}
		}
		up = run(t, "Upgrade", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing, OnTransition: hook}, Job: prev.JobID, JarID: first.Submit.JarID, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2, extra...), FlinkConfiguration: retain}}, lifecycle.OutcomeSucceeded)
		total := time.Since(begin)
		if up.Replace.RestoreFrom == "" || up.Replace.RestoreFrom != up.Savepoint.Location || up.Replace.Decision != "SavepointBeforeUpdate" {
			t.Errorf("upgrade progress %+v", up)
		}
		logUpgradeTiming(t, ctx, c, cluster.FlinkVersion, prev.JobID, up, begin, total, submitAt, answeredAt)
		t.Logf("upgrade phases: %s", strings.Join(phases, " "))
		c1, err := flinkfixture.ReadCounts(prevOut)
		if err != nil {
			t.Fatal(err)
		}
		countsContinue(t, ctx, out2, keys, c1, 3)
		prev, prevOut = up, out2
	}

	// Teardown into a store, redeploy by name: the counter continues.
	store, err := lifecycle.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	td := run(t, "Teardown", &lifecycle.Teardown{Env: lifecycle.Env{Client: c, Timing: timing}, Job: up.JobID, Store: store, Name: "app/counter"}, lifecycle.OutcomeSucceeded)
	if rec, ok, err := store.Get(ctx, "app/counter"); !ok || err != nil || rec.Location != td.Savepoint.Location || !flinkfixture.LocationExists(rec.Location) {
		t.Fatalf("stored %+v, %v, %v", rec, ok, err)
	}
	c2, err := flinkfixture.ReadCounts(out2)
	if err != nil {
		t.Fatal(err)
	}
	out3 := cluster.OutDir("upgrade-redeployed")
	// The redeploy starts the job through a Deployer, as for an
	// application cluster.
	dep := &runDeployer{c: c, jar: first.Submit.JarID, run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out3), FlinkConfiguration: retain}}
	re := run(t, "Redeploy", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Store: store, Name: "app/counter", Deployer: dep}, lifecycle.OutcomeSucceeded)
	if len(dep.calls) != 1 || dep.calls[0].RestorePath != td.Savepoint.Location || dep.calls[0].JobID != re.JobID {
		t.Errorf("deploy calls %+v", dep.calls)
	}
	if re.Replace.RestoreFrom != td.Savepoint.Location {
		t.Errorf("redeployed from %q, want %q", re.Replace.RestoreFrom, td.Savepoint.Location)
	}
	countsContinue(t, ctx, out3, keys, c2, 3)

	// A restore request rolls the job back to an older savepoint: the
	// counter goes back to the saved value, and the state the job had
	// before the rollback is kept in a savepoint of its own.
	before, err := flinkfixture.ReadCounts(out3)
	if err != nil {
		t.Fatal(err)
	}
	older := run(t, "TakeSavepoint", &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: c, Timing: timing}, Job: re.JobID}, lifecycle.OutcomeSucceeded)
	atSavepoint, err := flinkfixture.ReadCounts(out3)
	if err != nil {
		t.Fatal(err)
	}
	high := flinkfixture.WaitCounts(t, ctx, out3, keys, countsTimeout, func(k string, n int64) bool { return n >= atSavepoint[k]+60 })
	out6 := cluster.OutDir("upgrade-rolled-back")
	req := policy.RestoreRequest{Path: older.Savepoint.Location, Token: "rollback-1"}
	rb := run(t, "Restore request", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Job: re.JobID, JarID: first.Submit.JarID, Restore: req,
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out6), FlinkConfiguration: retain}}, lifecycle.OutcomeSucceeded)
	if rb.Replace.RestoreFrom != older.Savepoint.Location || rb.HandledRestore() != "rollback-1" || !flinkfixture.LocationExists(rb.Savepoint.Location) || rb.Savepoint.Location == older.Savepoint.Location {
		t.Errorf("rollback progress %+v", rb)
	}
	rolled := flinkfixture.WaitCounts(t, ctx, out6, keys, countsTimeout, func(string, int64) bool { return true })
	for k := range before {
		if rolled[k] < before[k] || rolled[k] >= high[k]-30 {
			t.Errorf("key %s after the rollback starts at %d; saved between %d and %d, %d before the rollback",
				k, rolled[k], before[k], atSavepoint[k], high[k])
		}
	}
	t.Logf("rollback: saved between %s and %s; %s before the rollback; first after it %s", format(before), format(atSavepoint), format(high), format(rolled))

	// A path Flink cannot restore ends the deploy with Flink's message,
	// once.
	bad := run(t, "Restore request, bad path", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Job: rb.JobID, JarID: first.Submit.JarID, Restore: policy.RestoreRequest{Path: "file:///nowhere/savepoint-0", Token: "bad-1", CancelWithoutSavepoint: true},
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(cluster.OutDir("upgrade-bad"))}}, badPathOutcome(v))
	if !strings.Contains(bad.Reason, "nowhere/savepoint-0") || bad.HandledRestore() != "bad-1" {
		t.Errorf("bad path: %+v", bad)
	}

	// A job that fails (--fail-at, no restart attempts) is restarted from
	// its latest retained checkpoint, without --fail-at.
	out4 := cluster.OutDir("upgrade-failing")
	failing := run(t, "Submit failing", &lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing}, JarID: first.Submit.JarID, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out4, "--fail-at", "60"), FlinkConfiguration: retain}}, lifecycle.OutcomeSucceeded)
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := c.JobStatus(ctx, failing.JobID)
		if err == nil && st == flinkapi.JobFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failing job is %s, %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c4, err := flinkfixture.ReadCounts(out4)
	if err != nil {
		t.Fatal(err)
	}
	out5 := cluster.OutDir("upgrade-restarted")
	rs := run(t, "Restart", &lifecycle.Restart{Env: lifecycle.Env{Client: c, Timing: timing}, Job: failing.JobID, JarID: first.Submit.JarID, Policy: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Millisecond)},
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out5), FlinkConfiguration: retain}}, lifecycle.OutcomeSucceeded)
	if rs.Replace.RestoreKind != policy.KindCheckpoint || rs.JobID == failing.JobID {
		t.Errorf("restart progress %+v", rs)
	}
	// The checkpoint is older than the failure: each count is at least
	// the checkpointed one, a little below the count at the failure.
	for k, n := range c4 {
		c4[k] = n - 40
	}
	countsContinue(t, ctx, out5, keys, c4, 3)
	run(t, "Teardown", &lifecycle.Teardown{Env: lifecycle.Env{Client: c, Timing: timing}, Job: rs.JobID}, lifecycle.OutcomeSucceeded)
}

// badPathOutcome is how a submission from a path Flink cannot restore
// ends: Flink answers the jar run with the failure.
func badPathOutcome(flinkapi.Version) lifecycle.Outcome { return lifecycle.OutcomeSubmitFailed }

// runDeployer starts jobs through a jar run: a Deployer as an application
// cluster's would be, on the session cluster.
type runDeployer struct {
	c     *flinkapi.Client
	jar   flinkapi.JarID
	run   flinkapi.RunJarRequest
	calls []lifecycle.DeployRequest
}

func (d *runDeployer) Deploy(ctx context.Context, req lifecycle.DeployRequest) (lifecycle.Cluster, error) {
	d.calls = append(d.calls, req)
	r := d.run
	r.JobID, r.SavepointPath, r.AllowNonRestoredState = req.JobID, req.RestorePath, req.AllowNonRestoredState
	if _, err := d.c.RunJar(ctx, d.jar, r); err != nil && !flinkapi.IsDuplicateJob(err) {
		return lifecycle.Cluster{}, err
	}
	return lifecycle.Cluster{Name: "session", JobID: req.JobID}, nil
}

// The jobs of a runDeployer share the session cluster, which is never
// deleted.
func (d *runDeployer) Delete(context.Context, lifecycle.Cluster) error         { return nil }
func (d *runDeployer) Exists(context.Context, lifecycle.Cluster) (bool, error) { return true, nil }
func (d *runDeployer) Client(lifecycle.Cluster) (lifecycle.API, error)         { return d.c, nil }
