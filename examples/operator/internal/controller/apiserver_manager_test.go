package controller

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// waitTimeout bounds each wait of the manager tests, which run on the
// wall clock.
const waitTimeout = 60 * time.Second

// kubeJob is a FlinkJob on the API server that the tests read and edit
// while a manager reconciles it.
type kubeJob struct {
	t   testing.TB
	c   client.Client
	key types.NamespacedName
}

func createJob(t testing.TB, ns, name string, spec v1alpha1.FlinkJobSpec) *kubeJob {
	t.Helper()
	_, c := kube(t)
	j := &kubeJob{t: t, c: c, key: types.NamespacedName{Namespace: ns, Name: name}}
	if err := c.Create(context.Background(), &v1alpha1.FlinkJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	return j
}

// get returns the FlinkJob, or nil once it is gone.
func (j *kubeJob) get() *v1alpha1.FlinkJob {
	j.t.Helper()
	var job v1alpha1.FlinkJob
	if err := j.c.Get(context.Background(), j.key, &job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		j.t.Fatal(err)
	}
	return &job
}

// edit changes the spec, again on a conflict with the operator's writes.
func (j *kubeJob) edit(change func(*v1alpha1.FlinkJobSpec)) {
	j.t.Helper()
	for {
		job := j.get()
		change(&job.Spec)
		err := j.c.Update(context.Background(), job)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			j.t.Fatal(err)
		}
	}
}

// wait waits until cond holds for the FlinkJob (nil once it is gone).
func (j *kubeJob) wait(what string, cond func(*v1alpha1.FlinkJob) bool) *v1alpha1.FlinkJob {
	j.t.Helper()
	var job *v1alpha1.FlinkJob
	deadline := time.Now().Add(waitTimeout)
	for {
		job = j.get()
		if cond(job) {
			return job
		}
		if time.Now().After(deadline) {
			status := "(gone)"
			if job != nil {
				status = fmt.Sprintf("%+v", job.Status)
			}
			j.t.Fatalf("%s %s: not within %v; status %s", j.key, what, waitTimeout, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// savepointInFlight holds while an upgrade's savepoint is triggered and
// not completed.
func savepointInFlight(j *v1alpha1.FlinkJob) bool {
	p := &j.Status.Progress
	return j.Status.Action == lifecycle.ActionUpgrade && p.Savepoint.Status.TriggerID != "" && p.Savepoint.Location == "" && !p.Done()
}

// upgraded holds once the job runs the spec after an upgrade.
func upgraded(j *v1alpha1.FlinkJob) bool {
	return runs(j) && j.Status.Action == lifecycle.ActionUpgrade
}

// checkOneUpgrade checks that srv ran the create and one upgrade of job:
// one savepoint, two jar runs, one live job, the status's, restored from
// the savepoint.
func checkOneUpgrade(t testing.TB, srv *flinktest.Server, job *v1alpha1.FlinkJob) {
	t.Helper()
	st := &job.Status
	if ids := triggerIDs(t, srv); len(ids) != 1 {
		t.Errorf("trigger ids %v, want one", ids)
	}
	if ids := jarRunJobIDs(t, srv); len(ids) != 2 || len(srv.Jobs()) != 2 {
		t.Errorf("jar runs for jobs %v, %d jobs on the server; want 2 (the create and the upgrade)", ids, len(srv.Jobs()))
		for _, j := range srv.Jobs() {
			t.Logf("job %s %s restored from %q", j.ID, j.State, j.RestoredFrom)
		}
		t.Logf("status %+v", job.Status)
	}
	if live := liveJobs(srv); len(live) != 1 || live[0].ID != st.JobID || live[0].RestoredFrom == "" || live[0].RestoredFrom != st.Latest.Location {
		t.Errorf("live jobs %+v; want one, %s, restored from %s", live, st.JobID, st.Latest.Location)
	}
}

// TestAPIServerManagerRestart: the manager stopped while an upgrade's
// savepoint is in flight, and a new manager started on the same API
// server, which finishes the upgrade from the stored status: one
// savepoint, one new job.
func TestAPIServerManagerRestart(t *testing.T) {
	srv, flink := realTimeFlink(t, flinktest.WithSavepointDuration(2*time.Second))
	ns := namespace(t)
	first := startManager(t, managerConfig{ns: ns, flink: flink})
	j := createJob(t, ns, "counter", counterSpec(counterJar(t)))
	j.wait("running", runs)
	j.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	at := j.wait("savepoint in flight", savepointInFlight)
	first.stop()
	stoppedAt := first.gets.Load()
	if p := j.get().Status.Progress; p.Done() || p.Savepoint.Status.TriggerID != at.Status.Progress.Savepoint.Status.TriggerID {
		t.Fatalf("the upgrade moved on after the stop: %+v", p)
	}

	second := startManager(t, managerConfig{ns: ns, flink: flink})
	job := j.wait("upgraded", upgraded)
	checkOneUpgrade(t, srv, job)
	if second.gets.Load() == 0 || first.gets.Load() != stoppedAt {
		t.Errorf("reconciles: first manager %d (%d at its stop), second %d", first.gets.Load(), stoppedAt, second.gets.Load())
	}
}

// TestAPIServerLeaderElection: two managers with lease-based leader
// election on the API server: only the leader reconciles; when it stops
// mid-upgrade without giving up its lease (as a process that dies), the
// other takes over once the lease expires and finishes the upgrade.
func TestAPIServerLeaderElection(t *testing.T) {
	srv, flink := realTimeFlink(t, flinktest.WithSavepointDuration(2*time.Second))
	ns := namespace(t)
	leases := namespace(t)
	a := startManager(t, managerConfig{ns: ns, flink: flink, leaderNS: leases})
	eventually(t, "a elected", waitTimeout, a.elected)
	b := startManager(t, managerConfig{ns: ns, flink: flink, leaderNS: leases})

	j := createJob(t, ns, "counter", counterSpec(counterJar(t)))
	j.wait("running", runs)
	j.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	j.wait("savepoint in flight", savepointInFlight)
	if b.elected() || b.gets.Load() != 0 || a.gets.Load() == 0 {
		t.Fatalf("before the stop: a elected %v, %d reconciles; b elected %v, %d reconciles", a.elected(), a.gets.Load(), b.elected(), b.gets.Load())
	}
	a.stop()
	stopped := time.Now()
	eventually(t, "b elected", waitTimeout, b.elected)
	t.Logf("b elected %v after a stopped", time.Since(stopped).Round(time.Millisecond))
	job := j.wait("upgraded", upgraded)
	checkOneUpgrade(t, srv, job)
	if b.gets.Load() == 0 {
		t.Errorf("b never reconciled")
	}
}

// scrape reads the manager's metrics endpoint: each sample's value by
// its name and labels as the text format writes them.
func scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAPIServerMetrics: after a scripted run (two FlinkJobs deployed, one
// upgraded and then deleted, the other's job failed and restarted) the
// manager's metrics endpoint counts each operation started and ended by
// outcome, the savepoints' durations, the restart and the jobs by state;
// and every transition became an event on the API server.
func TestAPIServerMetrics(t *testing.T) {
	srv, flink := realTimeFlink(t, flinktest.WithSavepointDuration(300*time.Millisecond))
	ns := namespace(t)
	m := startManager(t, managerConfig{ns: ns, flink: flink, metrics: true, recorder: true, concurrent: 2})
	eventually(t, "metrics endpoint", waitTimeout, func() bool {
		resp, err := http.Get("http://" + m.metrics + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	before := scrape(t, m.metrics)

	jar := counterJar(t)
	upgradedJob := createJob(t, ns, "upgraded", counterSpec(jar))
	spec := counterSpec(jar)
	spec.Restart.Backoff = policy.Duration(200 * time.Millisecond)
	restarted := createJob(t, ns, "restarted", spec)
	upgradedJob.wait("running", runs)
	failed := restarted.wait("running", runs).Status.JobID
	upgradedJob.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	upgradedJob.wait("upgraded", upgraded)
	if err := srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	restarted.wait("restarted", func(j *v1alpha1.FlinkJob) bool {
		return runs(j) && j.Status.Action == lifecycle.ActionRestart && j.Status.JobID != failed
	})
	if err := upgradedJob.c.Delete(context.Background(), upgradedJob.get()); err != nil {
		t.Fatal(err)
	}
	upgradedJob.wait("deleted", func(j *v1alpha1.FlinkJob) bool { return j == nil })
	// The gauge follows the reconcile after the last status write.
	var after map[string]float64
	eventually(t, "jobs gauge", waitTimeout, func() bool {
		after = scrape(t, m.metrics)
		return after[`flinkkit_jobs{state="Running"}`]-before[`flinkkit_jobs{state="Running"}`] == 1
	})

	delta := func(series string) float64 { return after[series] - before[series] }
	for series, want := range map[string]float64{
		`flinkkit_operations_started_total{operation="Deploy"}`:                      2,
		`flinkkit_operations_ended_total{operation="Deploy",outcome="Succeeded"}`:    2,
		`flinkkit_operations_started_total{operation="Upgrade"}`:                     1,
		`flinkkit_operations_ended_total{operation="Upgrade",outcome="Succeeded"}`:   1,
		`flinkkit_operations_started_total{operation="Restart"}`:                     1,
		`flinkkit_operations_ended_total{operation="Restart",outcome="Succeeded"}`:   1,
		`flinkkit_operations_started_total{operation="Teardown"}`:                    1,
		`flinkkit_operations_ended_total{operation="Teardown",outcome="Succeeded"}`:  1,
		`flinkkit_job_restarts_total`:                                                1,
		`flinkkit_savepoint_duration_seconds_count{operation="Upgrade"}`:             1,
		`flinkkit_savepoint_duration_seconds_count{operation="Teardown"}`:            1,
		`flinkkit_jobs{state="Running"}`:                                             1,
		`flinkkit_savepoint_duration_seconds_bucket{operation="Upgrade",le="0.1"}`:   0,
		`flinkkit_savepoint_duration_seconds_bucket{operation="Teardown",le="0.1"}`:  0,
		`flinkkit_savepoint_duration_seconds_bucket{operation="Upgrade",le="+Inf"}`:  1,
		`flinkkit_savepoint_duration_seconds_bucket{operation="Teardown",le="+Inf"}`: 1,
	} {
		if got := delta(series); got != want {
			t.Errorf("%s went up by %v, want %v", series, got, want)
		}
	}
	for _, op := range []string{"Upgrade", "Teardown"} {
		sum := delta(`flinkkit_savepoint_duration_seconds_sum{operation="` + op + `"}`)
		if sum < 0.3 || sum > 10 {
			t.Errorf("%s savepoint took %vs; flinktest takes 0.3s", op, sum)
		}
	}

	// The events on the API server.
	want := []string{"DeploySucceeded", "UpgradeSavepoint", "UpgradeSucceeded", "RestartSucceeded", "TeardownSucceeded"}
	_, c := kube(t)
	eventually(t, "events", waitTimeout, func() bool {
		var list eventsv1.EventList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			seen[e.Reason] = true
		}
		for _, r := range want {
			if !seen[r] {
				return false
			}
		}
		return true
	})
}
