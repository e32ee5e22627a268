package contract

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// resourceRequirements: on Flink's default scheduler, reading and setting
// a job's resource requirements (1.18+) answers 500: only the adaptive
// scheduler supports them.
func (s *suite) resourceRequirements(t *testing.T) {
	s.needMain(t)
	if !s.v.Supports(flinkapi.FeatureResourceRequirements) {
		t.Skipf("Flink %v has no resource requirements (1.18+)", s.v)
	}
	ctx := s.ctx(t)
	_, err := s.c.ResourceRequirements(ctx, s.main.id)
	ae := apiError(t, "ResourceRequirements on the default scheduler", err)
	t.Logf("GET resource requirements on the default scheduler: %d %q", ae.StatusCode, ae.Message())
	wantStatus(t, "ResourceRequirements", ae, 500)
	if !strings.Contains(ae.Message(), "DefaultScheduler does not support") {
		t.Errorf("message %q does not name the default scheduler", ae.Message())
	}
	if flinkapi.IsJobNotFound(err) || flinkapi.IsRetryable(err) {
		t.Errorf("%v: IsJobNotFound %v, IsRetryable %v; want false, false", err, flinkapi.IsJobNotFound(err), flinkapi.IsRetryable(err))
	}

	d, err := s.c.Job(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	req := flinkapi.ResourceRequirements{}
	for _, v := range d.Vertices {
		req[v.ID] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: 1}
	}
	err = s.c.SetResourceRequirements(ctx, s.main.id, req)
	ae = apiError(t, "SetResourceRequirements on the default scheduler", err)
	t.Logf("PUT resource requirements on the default scheduler: %d %q", ae.StatusCode, ae.Message())
	wantStatus(t, "SetResourceRequirements", ae, 500)
	if st, err := s.c.JobStatus(ctx, s.main.id); err != nil || st != flinkapi.JobRunning {
		t.Errorf("after the rejected PUT the job is %s, %v; want RUNNING", st, err)
	}
}

// resourceRequirementsAdaptive: with the adaptive scheduler,
// ResourceRequirements answers bounds for every vertex, and
// SetResourceRequirements replaces them. On Flink 2.3 the raised bounds
// rescale the job in place, which its rescale history shows (the
// RescaleHistory subtest).
func (s *suite) resourceRequirementsAdaptive(t *testing.T) {
	if s.tg.AdaptiveURL == "" {
		t.Skip("Target.AdaptiveURL is empty: no cluster with the adaptive scheduler")
	}
	if !s.v.Supports(flinkapi.FeatureResourceRequirements) {
		t.Skipf("Flink %v has no resource requirements (1.18+)", s.v)
	}
	ctx := s.ctx(t)
	c, err := flinkapi.NewClient(s.tg.AdaptiveURL)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Version(ctx); err != nil || v != s.v {
		t.Fatalf("adaptive cluster: Version %v, %v; want %v", v, err, s.v)
	}
	jar, err := c.UploadJar(ctx, s.tg.JarPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.tg.Timeout)
		defer cancel()
		if err := c.DeleteJar(ctx, jar); err != nil {
			t.Logf("adaptive cluster: DeleteJar: %v", err)
		}
	})
	j := s.submit(t, t, ctx, c, jar, jobSpec{name: "contract-adaptive", keys: 1, rate: 10})
	d := s.waitRunning(t, ctx, c, j.id)

	got, err := c.ResourceRequirements(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	want := flinkapi.ResourceRequirements{}
	for _, v := range d.Vertices {
		want[v.ID] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: v.Parallelism}
	}
	if !maps.Equal(got, want) {
		t.Errorf("ResourceRequirements %v, want %v (the vertices' parallelism)", got, want)
	}

	next := flinkapi.ResourceRequirements{}
	for id := range want {
		next[id] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: 2}
	}
	raised := s.tg.Now()
	if err := c.SetResourceRequirements(ctx, j.id, next); err != nil {
		t.Fatal(err)
	}
	got, err = c.ResourceRequirements(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, next) {
		t.Errorf("ResourceRequirements after the PUT: %v, want %v", got, next)
	}
	if s.v.Supports(flinkapi.FeatureRescaleHistory) {
		t.Run("RescaleHistory", func(t *testing.T) { s.rescaleHistoryAdaptive(t, ctx, c, j, d, raised) })
	}
}

// cancelJob: CancelJob of a running job is accepted and the job ends
// CANCELED; cancelling it again is accepted as well (1.15+).
func (s *suite) cancelJob(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	j := s.submit(t, t, ctx, s.c, s.jar, jobSpec{name: "contract-cancel", keys: 1, rate: 10})
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobRunning)
	if err := s.c.CancelJob(ctx, j.id); err != nil {
		t.Fatalf("CancelJob of a running job: %v", err)
	}
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobCanceled)
	d, err := s.c.Job(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != flinkapi.JobCanceled {
		t.Errorf("Job state %s, want CANCELED", d.State)
	}
	s.checkTime(t, "end-time of the cancelled job", d.EndTime, j.submitted)

	t.Run("Again", func(t *testing.T) {
		err := s.c.CancelJob(ctx, j.id)
		t.Logf("cancel of a CANCELED job on Flink %v: %v", s.v, err)
		if err != nil {
			t.Errorf("second CancelJob: %v, want it accepted (202) as Flink 1.15+ does", err)
		}
		if st, err := s.c.JobStatus(ctx, j.id); err != nil || st != flinkapi.JobCanceled {
			t.Errorf("after the second cancel: %s, %v; want CANCELED", st, err)
		}
	})
}

// jobExceptions: a job that fails twice (one restart) ends FAILED, and
// JobExceptions lists both failures with readable messages, one of them the
// test job's own exception.
func (s *suite) jobExceptions(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	const failAt = 10
	j := s.submit(t, t, ctx, s.c, s.jar, jobSpec{name: "contract-failing", keys: 2, rate: 40, failAt: failAt, restartAttempts: 1})
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobFailed)

	var ex *flinkapi.JobExceptions
	s.waitFor(t, ctx, "two entries in the exception history", func() (bool, string) {
		var err error
		ex, err = s.c.JobExceptions(ctx, j.id, 0)
		if err != nil {
			return false, err.Error()
		}
		return len(ex.Entries) >= 2, fmt.Sprintf("%d entries", len(ex.Entries))
	})
	own := fmt.Sprintf("(--fail-at %d)", failAt)
	var found bool
	for i, e := range ex.Entries {
		what := fmt.Sprintf("entry %d", i)
		if !flinkapi.IsJavaClassName(e.ExceptionName) {
			t.Errorf("%s: exception name %q is not a class name", what, e.ExceptionName)
		}
		checkReadable(t, what+" message", e.Message)
		s.checkTime(t, what+" timestamp", e.Timestamp, j.submitted)
		if i > 0 && e.Timestamp.After(ex.Entries[i-1].Timestamp) {
			t.Errorf("%s is newer than entry %d: want newest first", what, i-1)
		}
		if !strings.HasPrefix(e.StackTrace, e.ExceptionName) {
			t.Errorf("%s: stack trace %.100q does not start with %s", what, e.StackTrace, e.ExceptionName)
		}
		if e.ExceptionName == "java.lang.IllegalStateException" && strings.Contains(e.Message, own) {
			found = true
		}
		t.Logf("%s: %s: %s", what, e.ExceptionName, e.Message)
	}
	if !found {
		t.Errorf("no entry is the test job's IllegalStateException %q", own)
	}
	if ex.Truncated {
		t.Error("history truncated with the default maximum")
	}

	one, err := s.c.JobExceptions(ctx, j.id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Entries) != 1 || !one.Truncated || one.Entries[0].Message != ex.Entries[0].Message {
		t.Errorf("maxExceptions 1: %d entries, truncated %v; want the newest entry only, truncated", len(one.Entries), one.Truncated)
	}
}

// savepointRestoresState is the state test from the field: a job restored
// from a stop-with-savepoint continues each key's count where the stopped
// job left it; a job started without the savepoint counts from zero.
func (s *suite) savepointRestoresState(t *testing.T) {
	if s.tg.ReadCounts == nil {
		t.Skip("Target.ReadCounts is nil: the target runs no job whose counts can be read")
	}
	s.needJar(t)
	ctx := s.ctx(t)
	const keys, minCount = 3, 40
	spec := jobSpec{name: "contract-state", keys: keys, rate: 40, checkpointInterval: time.Second}

	var c1 map[string]int64
	var location string
	if !t.Run("StopWithSavepoint", func(t *testing.T) {
		j := s.submit(t, t, ctx, s.c, s.jar, spec)
		s.waitRunning(t, ctx, s.c, j.id)
		s.waitCounts(t, ctx, j.out, keys, fmt.Sprintf("every key counted to %d", minCount),
			func(_ string, n int64) bool { return n >= minCount })
		location = s.stop(t, ctx, s.c, j.id)
		var err error
		if c1, err = s.tg.ReadCounts(j.out); err != nil {
			t.Fatal(err)
		}
		t.Logf("counts at the stop: %s", formatCounts(c1))
		if len(c1) != keys {
			t.Fatalf("counts %s, want %d keys", formatCounts(c1), keys)
		}
	}) {
		return
	}

	t.Run("RunJarFromSavepoint", func(t *testing.T) {
		restored := spec
		restored.name, restored.savepointPath = "contract-state-restored", location
		j := s.submit(t, t, ctx, s.c, s.jar, restored)
		first := s.firstCounts(t, ctx, j.out, keys)
		t.Logf("first counts after the restore: %s", formatCounts(first))
		for k, n := range c1 {
			if first[k] < n {
				t.Errorf("key %s: first count after the restore %d, want >= %d (the count at the stop): the state was not restored", k, first[k], n)
			}
		}
		later := s.waitCounts(t, ctx, j.out, keys, "every key counting past its count at the stop",
			func(k string, n int64) bool { return n > c1[k]+5 })
		t.Logf("counts later: %s", formatCounts(later))
		s.waitFor(t, ctx, "the savepoint as the restored checkpoint", func() (bool, string) {
			st, err := s.c.Checkpoints(ctx, j.id)
			if err != nil {
				return false, err.Error()
			}
			r := st.LatestRestored
			return r != nil && r.IsSavepoint && r.ExternalPath == location && st.Counts.Restored == 1,
				fmt.Sprintf("latest restored %+v, restored count %d", r, st.Counts.Restored)
		})
		if err := s.c.CancelJob(ctx, j.id); err != nil {
			t.Errorf("CancelJob: %v", err)
		}
	})

	t.Run("RunJarWithoutSavepoint", func(t *testing.T) {
		fresh := spec
		fresh.name = "contract-state-fresh"
		j := s.submit(t, t, ctx, s.c, s.jar, fresh)
		first := s.firstCounts(t, ctx, j.out, keys)
		t.Logf("first counts without the savepoint: %s", formatCounts(first))
		for k, n := range c1 {
			if first[k] >= n {
				t.Errorf("key %s: first count without the savepoint %d, want < %d: the job did not start from zero", k, first[k], n)
			}
		}
		if err := s.c.CancelJob(ctx, j.id); err != nil {
			t.Errorf("CancelJob: %v", err)
		}
	})
}

// deleteJar: DeleteJar removes the jar; deleting it again answers 400.
func (s *suite) deleteJar(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	if err := s.c.DeleteJar(ctx, s.jar); err != nil {
		t.Fatal(err)
	}
	jars, err := s.c.ListJars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(jars, func(j flinkapi.Jar) bool { return j.ID == s.jar }) {
		t.Errorf("jar %s still listed after DeleteJar", s.jar)
	}
	err = s.c.DeleteJar(ctx, s.jar)
	ae := apiError(t, "second DeleteJar", err)
	t.Logf("second DeleteJar: %d %q", ae.StatusCode, ae.Message())
	wantStatus(t, "second DeleteJar", ae, 400)
	if !errors.Is(err, flinkapi.ErrBadRequest) || errors.Is(err, flinkapi.ErrNotFound) {
		t.Errorf("%v: want ErrBadRequest, not ErrNotFound", err)
	}
	checkReadable(t, "message", ae.Message())
}

// restartJobManager: a JobManager restarted without high availability has
// forgotten the jobs and the savepoint triggers of its predecessor.
func (s *suite) restartJobManager(t *testing.T) {
	if s.tg.RestartJobManager == nil {
		t.Skip("Target.RestartJobManager is nil")
	}
	if s.main == nil {
		t.Skip("needs the main job, which RunJar did not start")
	}
	ctx := s.ctx(t)
	if _, err := s.c.Job(ctx, s.main.id); err != nil {
		t.Fatalf("before the restart: Job: %v", err)
	}
	op := s.savepoint.op
	if op.TriggerID != "" {
		if _, err := s.c.OperationStatus(ctx, op); err != nil {
			t.Fatalf("before the restart: OperationStatus: %v", err)
		}
	}
	start := s.tg.Now()
	if err := s.tg.RestartJobManager(ctx); err != nil {
		t.Fatalf("RestartJobManager: %v", err)
	}
	t.Logf("JobManager restarted in %v", s.tg.Now().Sub(start).Round(time.Millisecond))

	_, err := s.c.Job(ctx, s.main.id)
	if !flinkapi.IsJobNotFound(err) || flinkapi.IsTriggerNotFound(err) {
		t.Errorf("Job of the old job after the restart: %v; want IsJobNotFound", err)
	}
	if op.TriggerID != "" {
		_, err := s.c.OperationStatus(ctx, op)
		var ae *flinkapi.APIError
		if errors.As(err, &ae) {
			t.Logf("OperationStatus of the old savepoint trigger: %d %q", ae.StatusCode, ae.Message())
		}
		if !flinkapi.IsTriggerNotFound(err) || flinkapi.IsJobNotFound(err) {
			t.Errorf("OperationStatus of the old savepoint trigger after the restart: %v; want IsTriggerNotFound, not IsJobNotFound", err)
		}
	} else {
		t.Log("no savepoint trigger id known (TriggerSavepoint failed): trigger part skipped")
	}
	jobs, err := s.c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Errorf("ListJobs after the restart: %+v, want no jobs", jobs)
	}
	ov, err := s.c.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ov.TaskManagers != 1 || ov.JobsRunning != 0 || ov.JobsFinished != 0 {
		t.Errorf("overview after the restart: %+v, want 1 task manager and no jobs", ov)
	}
}

// shutdownCluster: DELETE /cluster is accepted and the JobManager then stops
// answering.
func (s *suite) shutdownCluster(t *testing.T) {
	if s.tg.ShutdownURL == "" {
		t.Skip("Target.ShutdownURL is empty: no cluster to shut down")
	}
	ctx := s.ctx(t)
	c, err := flinkapi.NewClient(s.tg.ShutdownURL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Overview(ctx); err != nil {
		t.Fatalf("the cluster to shut down does not answer: %v", err)
	}
	if err := c.ShutdownCluster(ctx); err != nil {
		t.Fatalf("ShutdownCluster: %v", err)
	}
	s.waitFor(t, ctx, "the JobManager to stop answering after ShutdownCluster", func() (bool, string) {
		_, err := c.Overview(ctx)
		var te *flinkapi.TransportError
		if errors.As(err, &te) {
			return true, ""
		}
		return false, fmt.Sprintf("GET /overview still answers: %v", err)
	})
}
