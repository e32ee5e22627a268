package contract

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// suite is the state the contract items share: the client, the uploaded
// jar, the long-running main job and the savepoint taken of it.
type suite struct {
	tg   Target
	root *testing.T // Run's test: owner of what outlives one item
	c    *flinkapi.Client
	v    flinkapi.Version

	jar  flinkapi.JarID
	main *job // running from RunJar until StopWithSavepoint
	// latestCheckpoint is a completed checkpoint of the main job.
	latestCheckpoint *flinkapi.CheckpointStats
	// savepoint is the savepoint TriggerSavepoint took of the main job.
	savepoint struct {
		op       flinkapi.Operation
		location string
	}
	mainStopped bool // the main job ended FINISHED by StopWithSavepoint
}

// mainSpec is the main job: two keys, checkpointed every second.
var mainSpec = jobSpec{name: "contract-main", keys: 2, rate: 20, checkpointInterval: time.Second}

// Run runs the contract suite against target, one subtest per contract
// item. Items run in order; those that need what an earlier item failed to
// provide (the jar, the main job, a savepoint) are skipped and say so.
func Run(t *testing.T, target Target) {
	t.Helper()
	tg, err := target.withDefaults(t.TempDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := flinkapi.NewClient(tg.URL)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", tg.URL, err)
	}
	s := &suite{tg: tg, root: t, c: c}
	v, err := c.Version(s.ctx(t))
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	s.v = v
	t.Logf("Flink %s at %s", v, tg.URL)

	items := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Cluster", s.cluster},
		{"UploadJar", s.uploadJar},
		{"ListJars", s.listJars},
		{"RunJar", s.runJar},
		{"RunJarDuplicateJobID", s.runJarDuplicateJobID},
		{"ListJobs", s.listJobs},
		{"JobsOverview", s.jobsOverview},
		{"Applications", s.applications},
		{"RunJarApplication", s.runJarApplication},
		{"Job", s.jobDetails},
		{"JobStatus", s.jobStatus},
		{"ExecutionResultRunning", s.executionResultRunning},
		{"JobNotFound", s.jobNotFound},
		{"Checkpoints", s.checkpoints},
		{"CheckpointDetails", s.checkpointDetails},
		{"CheckpointConfig", s.checkpointConfig},
		{"JobConfig", s.jobConfig},
		{"TriggerCheckpoint", s.triggerCheckpoint},
		{"TriggerSavepoint", s.triggerSavepoint},
		{"OperationStatusUnknownTrigger", s.operationStatusUnknownTrigger},
		{"SavepointOfUnknownJob", s.savepointOfUnknownJob},
		{"ResourceRequirements", s.resourceRequirements},
		{"ResourceRequirementsAdaptive", s.resourceRequirementsAdaptive},
		{"RescaleHistory", s.rescaleHistory},
		{"VertexMetrics", s.vertexMetrics},
		{"JobPlanDetails", s.jobPlanDetails},
		{"JarPlan", s.jarPlan},
		{"JarPlanErrors", s.jarPlanErrors},
		{"JarPlanOfRunningJob", s.jarPlanOfRunningJob},
		{"JobRestarts", s.jobRestarts},
		{"StopWithSavepoint", s.stopWithSavepoint},
		{"CancelFinishedJob", s.cancelFinishedJob},
		{"DisposeSavepoint", s.disposeSavepoint},
		{"CancelJob", s.cancelJob},
		{"JobExceptions", s.jobExceptions},
		{"ExecutionResultBounded", s.executionResultBounded},
		{"ExecutionResultFailed", s.executionResultFailed},
		{"SavepointRestoresState", s.savepointRestoresState},
		{"DeleteJar", s.deleteJar},
		{"RestartJobManager", s.restartJobManager},
		{"ShutdownCluster", s.shutdownCluster},
	}
	for _, it := range items {
		t.Run(it.name, it.run)
	}
}

func (s *suite) needJar(t *testing.T) {
	t.Helper()
	if s.jar == "" {
		t.Skip("needs the test job jar, which UploadJar did not upload")
	}
}

func (s *suite) needMain(t *testing.T) {
	t.Helper()
	if s.main == nil {
		t.Skip("needs the main job, which RunJar did not start")
	}
	if s.mainStopped {
		t.Skip("the main job was already stopped")
	}
}

// cluster: Config, Version, Overview and TaskManagers describe one running
// cluster of the expected version with one TaskManager.
func (s *suite) cluster(t *testing.T) {
	ctx := s.ctx(t)
	t.Run("Config", func(t *testing.T) {
		cfg, err := s.c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.tg.Version != "" && cfg.FlinkVersion != s.tg.Version {
			t.Errorf("flink-version %q, want %q", cfg.FlinkVersion, s.tg.Version)
		}
		if cfg.FlinkRevision == "" {
			t.Error("flink-revision is empty")
		}
		if cfg.RefreshInterval <= 0 {
			t.Errorf("refresh-interval %d, want > 0", cfg.RefreshInterval)
		}
		if !cfg.Features.WebSubmit {
			t.Error("web-submit is off: the cluster serves no /jars routes")
		}
	})
	t.Run("Version", func(t *testing.T) {
		v, err := s.c.RefreshVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.tg.Version != "" {
			want, err := flinkapi.ParseVersion(s.tg.Version)
			if err != nil {
				t.Fatalf("Target.Version: %v", err)
			}
			if v != want {
				t.Errorf("Version %v, want %v", v, want)
			}
		}
		if !v.AtLeast(1, 15) {
			t.Errorf("Version %v: the suite expects Flink 1.15 or later", v)
		}
	})
	var slots int
	t.Run("Overview", func(t *testing.T) {
		ov, err := s.c.Overview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ov.TaskManagers != 1 {
			t.Errorf("taskmanagers %d, want 1", ov.TaskManagers)
		}
		if ov.SlotsTotal <= 0 || ov.SlotsAvailable < 0 || ov.SlotsAvailable > ov.SlotsTotal {
			t.Errorf("slots-total %d, slots-available %d: want 0 <= available <= total, total > 0", ov.SlotsTotal, ov.SlotsAvailable)
		}
		if s.tg.Version != "" && ov.FlinkVersion != s.tg.Version {
			t.Errorf("flink-version %q, want %q", ov.FlinkVersion, s.tg.Version)
		}
		if ov.FlinkCommit == "" {
			t.Error("flink-commit is empty")
		}
		slots = ov.SlotsTotal
	})
	t.Run("TaskManagers", func(t *testing.T) {
		tms, err := s.c.TaskManagers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tms) != 1 {
			t.Fatalf("%d task managers, want 1: %+v", len(tms), tms)
		}
		tm := tms[0]
		if tm.ID == "" || tm.Path == "" || tm.DataPort <= 0 {
			t.Errorf("id %q, path %q, data port %d: want all set", tm.ID, tm.Path, tm.DataPort)
		}
		if tm.SlotsNumber <= 0 || slots > 0 && tm.SlotsNumber != slots {
			t.Errorf("slotsNumber %d, want %d (the overview's slots-total)", tm.SlotsNumber, slots)
		}
		if tm.FreeSlots < 0 || tm.FreeSlots > tm.SlotsNumber {
			t.Errorf("freeSlots %d of %d", tm.FreeSlots, tm.SlotsNumber)
		}
		if tm.CPUCores <= 0 || tm.PhysicalMemory <= 0 {
			t.Errorf("hardware: %d cores, %d bytes: want both > 0", tm.CPUCores, tm.PhysicalMemory)
		}
		// Right after the TaskManager registered, Flink reports 0 until
		// the first heartbeat arrives; then the epoch time of the last one.
		since := s.tg.Now().Add(-time.Minute)
		s.waitFor(t, ctx, "a heartbeat of the task manager", func() (bool, string) {
			tms, err := s.c.TaskManagers(ctx)
			if err != nil || len(tms) != 1 {
				return false, fmt.Sprint(tms, err)
			}
			tm = tms[0]
			return !tm.LastHeartbeat.IsZero(), "no heartbeat yet"
		})
		s.checkTime(t, "last heartbeat", tm.LastHeartbeat, since)
	})
}

// uploadJar: UploadJar answers the id Flink gave the file: "<uuid>_<name>".
func (s *suite) uploadJar(t *testing.T) {
	ctx := s.ctx(t)
	id, err := s.c.UploadJar(ctx, s.tg.JarPath)
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(s.tg.JarPath); !strings.HasSuffix(string(id), "_"+base) {
		t.Errorf("jar id %q, want <uuid>_%s", id, base)
	}
	s.jar = id
}

// listJars: the uploaded jar is listed once, with its name and entry class.
func (s *suite) listJars(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	jars, err := s.c.ListJars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found []flinkapi.Jar
	for _, j := range jars {
		if j.ID == s.jar {
			found = append(found, j)
		}
	}
	if len(found) != 1 {
		t.Fatalf("jar %s listed %d times in %+v", s.jar, len(found), jars)
	}
	j := found[0]
	if want := filepath.Base(s.tg.JarPath); j.Name != want {
		t.Errorf("name %q, want %q", j.Name, want)
	}
	if !slices.ContainsFunc(j.Entries, func(e flinkapi.JarEntry) bool { return e.Name == s.tg.EntryClass }) {
		t.Errorf("entries %+v lack the entry class %s", j.Entries, s.tg.EntryClass)
	}
	s.checkTime(t, "uploaded", j.Uploaded, s.tg.Now().Add(-time.Minute))
}

// runJar: RunJar with a client-chosen job id answers that id, and the job
// comes up RUNNING. The job stays up for the items that follow.
func (s *suite) runJar(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	j := s.submit(t, s.root, ctx, s.c, s.jar, mainSpec)
	s.waitRunning(t, ctx, s.c, j.id)
	s.main = j
}

// runJarDuplicateJobID: a second RunJar with the job id of a running job is
// rejected, and the cluster still runs that job once (invariant 5).
func (s *suite) runJarDuplicateJobID(t *testing.T) {
	s.needJar(t)
	s.needMain(t)
	ctx := s.ctx(t)
	req := flinkapi.RunJarRequest{
		EntryClass:  s.tg.EntryClass,
		ProgramArgs: mainSpec.args(s.tg.OutDir("contract-duplicate")),
		JobID:       s.main.id,
	}
	got, err := s.c.RunJar(ctx, s.jar, req)
	if err == nil {
		t.Fatalf("a second RunJar with job id %s was accepted (answered %s)", s.main.id, got)
	}
	ae := apiError(t, "second RunJar", err)
	// Flink answers as for any program that failed: 400 "Could not
	// execute application."; only the innermost cause of the trace says
	// why (DuplicateJobSubmissionException up to 1.x,
	// DuplicateApplicationSubmissionException in 2.x).
	cause := flinkapi.RootCause(ae.StackTrace)
	t.Logf("second RunJar with a running job's id: %d %q, caused by %q", ae.StatusCode, ae.Message(), cause)
	wantStatus(t, "second RunJar", ae, 400)
	if !errors.Is(err, flinkapi.ErrBadRequest) {
		t.Errorf("second RunJar: %v does not match ErrBadRequest", err)
	}
	if !strings.Contains(cause, "has already been submitted") {
		t.Errorf("second RunJar: root cause %q does not say the job was already submitted", cause)
	}
	if !flinkapi.IsDuplicateJob(err) {
		t.Errorf("second RunJar: IsDuplicateJob(%v) = false", err)
	}

	jobs, err := s.c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, j := range jobs {
		if j.ID == s.main.id {
			n++
			if j.Status != flinkapi.JobRunning {
				t.Errorf("after the second RunJar the job is %s, want RUNNING", j.Status)
			}
		}
	}
	if n != 1 {
		t.Errorf("after the second RunJar, ListJobs shows job %s %d times, want once: %+v", s.main.id, n, jobs)
	}
}

// listJobs: ListJobs shows the main job once, RUNNING.
func (s *suite) listJobs(t *testing.T) {
	s.needMain(t)
	jobs, err := s.c.ListJobs(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var found []flinkapi.JobIDStatus
	for _, j := range jobs {
		if !j.Status.IsKnown() {
			t.Errorf("job %s has unknown status %q", j.ID, j.Status)
		}
		if j.ID == s.main.id {
			found = append(found, j)
		}
	}
	if len(found) != 1 || found[0].Status != flinkapi.JobRunning {
		t.Errorf("ListJobs shows %+v for job %s, want it once, RUNNING", found, s.main.id)
	}
}

// jobsOverview: JobsOverview shows the main job's name, state and times.
func (s *suite) jobsOverview(t *testing.T) {
	s.needMain(t)
	jobs, err := s.c.JobsOverview(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(jobs, func(j flinkapi.JobOverview) bool { return j.ID == s.main.id })
	if i < 0 {
		t.Fatalf("job %s missing from %+v", s.main.id, jobs)
	}
	j := jobs[i]
	if j.Name != mainSpec.name || j.State != flinkapi.JobRunning {
		t.Errorf("name %q, state %s; want %q, RUNNING", j.Name, j.State, mainSpec.name)
	}
	s.checkTime(t, "start-time", j.StartTime, s.main.submitted)
	s.checkTime(t, "last-modification", j.LastModification, s.main.submitted)
	if !j.EndTime.IsZero() {
		t.Errorf("end-time %v of a running job, want zero", j.EndTime)
	}
	if j.Duration <= 0 {
		t.Errorf("duration %v, want > 0", j.Duration)
	}
	if j.Tasks.Total <= 0 || j.Tasks.Running != j.Tasks.Total {
		t.Errorf("tasks %+v, want all running", j.Tasks)
	}
	// jobType and schedulerType joined the overview's entries in 2.3.
	switch {
	case s.v.AtLeast(2, 3) && (j.JobType != "STREAMING" || j.SchedulerType != "Default"):
		t.Errorf("jobType %q, schedulerType %q; want STREAMING, Default", j.JobType, j.SchedulerType)
	case !s.v.AtLeast(2, 0) && (j.JobType != "" || j.SchedulerType != ""):
		t.Errorf("jobType %q, schedulerType %q from Flink %s, which has neither", j.JobType, j.SchedulerType, s.v)
	}
}

// jobDetails: Job shows the main job's details, its vertices running with
// the parallelism it was given.
func (s *suite) jobDetails(t *testing.T) {
	s.needMain(t)
	d, err := s.c.Job(s.ctx(t), s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != s.main.id || d.Name != mainSpec.name || d.State != flinkapi.JobRunning {
		t.Errorf("id %s, name %q, state %s; want %s, %q, RUNNING", d.ID, d.Name, d.State, s.main.id, mainSpec.name)
	}
	if s.v.AtLeast(1, 16) && d.JobType != "STREAMING" {
		t.Errorf("job-type %q, want STREAMING", d.JobType)
	}
	s.checkTime(t, "start-time", d.StartTime, s.main.submitted)
	s.checkTime(t, "now", d.Now, s.main.submitted)
	s.checkTime(t, "timestamps[RUNNING]", d.Timestamps[flinkapi.JobRunning], s.main.submitted)
	if !d.EndTime.IsZero() {
		t.Errorf("end-time %v of a running job, want zero", d.EndTime)
	}
	if len(d.Vertices) == 0 {
		t.Fatal("no vertices")
	}
	for _, v := range d.Vertices {
		if v.ID == "" || v.Name == "" || v.Parallelism != 1 || v.Status != "RUNNING" || v.Tasks.Running != 1 {
			t.Errorf("vertex %+v: want id and name set, parallelism 1, RUNNING with one running task", v)
		}
	}
}

// jobStatus: JobStatus answers RUNNING.
func (s *suite) jobStatus(t *testing.T) {
	s.needMain(t)
	st, err := s.c.JobStatus(s.ctx(t), s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if st != flinkapi.JobRunning {
		t.Errorf("JobStatus %s, want RUNNING", st)
	}
}

// jobNotFound: the calls on a job the cluster does not know answer 404 for
// which IsJobNotFound is true.
func (s *suite) jobNotFound(t *testing.T) {
	ctx := s.ctx(t)
	unknown := flinkapi.NewJobID()
	calls := []struct {
		name   string
		call   func() error
		status int // what Flink 1.20 and 2.3 answer
	}{
		{name: "Job", status: 404, call: func() error { _, err := s.c.Job(ctx, unknown); return err }},
		// GET /jobs/:jobid/status answers 500 ["Internal server error.",
		// "<Exception on server side: ...FlinkJobNotFoundException: Could
		// not find Flink job (id)..."].
		{name: "JobStatus", status: 500, call: func() error { _, err := s.c.JobStatus(ctx, unknown); return err }},
		{name: "JobExceptions", status: 404, call: func() error { _, err := s.c.JobExceptions(ctx, unknown, 0); return err }},
		{name: "Checkpoints", status: 404, call: func() error { _, err := s.c.Checkpoints(ctx, unknown); return err }},
		{name: "JobConfig", status: 404, call: func() error { _, err := s.c.JobConfig(ctx, unknown); return err }},
		// PATCH /jobs/:jobid answers 404 "Job could not be found.".
		{name: "CancelJob", status: 404, call: func() error { return s.c.CancelJob(ctx, unknown) }},
	}
	for _, cl := range calls {
		t.Run(cl.name, func(t *testing.T) {
			err := cl.call()
			ae := apiError(t, cl.name+" of an unknown job", err)
			t.Logf("%s of an unknown job: %d %q", cl.name, ae.StatusCode, ae.Message())
			wantStatus(t, cl.name, ae, cl.status)
			checkReadable(t, "message", ae.Message())
			if flinkapi.IsTriggerNotFound(err) || flinkapi.IsUnknownRoute(err) {
				t.Errorf("%v: IsTriggerNotFound %v, IsUnknownRoute %v; want false, false",
					err, flinkapi.IsTriggerNotFound(err), flinkapi.IsUnknownRoute(err))
			}
			if !flinkapi.IsJobNotFound(err) {
				t.Errorf("%v: IsJobNotFound false, want true", err)
			}
		})
	}
}

// checkpoints: a completed checkpoint of the main job shows up in the
// statistics with its location.
func (s *suite) checkpoints(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	var st *flinkapi.CheckpointStatistics
	s.waitFor(t, ctx, "a completed checkpoint of the main job", func() (bool, string) {
		var err error
		st, err = s.c.Checkpoints(ctx, s.main.id)
		if err != nil {
			return false, err.Error()
		}
		return st.LatestCompleted != nil, "no completed checkpoint"
	})
	n := st.Counts
	if n.Completed < 1 || n.Total < n.Completed+n.Failed+n.InProgress || n.Restored != 0 {
		t.Errorf("counts %+v: want completed >= 1, total >= completed+failed+in_progress, restored 0", n)
	}
	cp := st.LatestCompleted
	if cp.Status != flinkapi.CheckpointCompleted || cp.IsSavepoint || cp.ID <= 0 {
		t.Errorf("latest completed: id %d, status %s, savepoint %v", cp.ID, cp.Status, cp.IsSavepoint)
	}
	if cp.ExternalPath == "" {
		t.Error("latest completed checkpoint has no external_path")
	} else if s.tg.CheckpointDir != "" && !under(cp.ExternalPath, s.tg.CheckpointDir) {
		t.Errorf("external_path %q is not under %s", cp.ExternalPath, s.tg.CheckpointDir)
	}
	if cp.NumSubtasks <= 0 || cp.NumAcknowledgedSubtasks != cp.NumSubtasks {
		t.Errorf("acknowledged %d of %d subtasks", cp.NumAcknowledgedSubtasks, cp.NumSubtasks)
	}
	s.checkTime(t, "trigger time", cp.TriggerTime, s.main.submitted)
	if cp.LatestAck.Before(cp.TriggerTime) {
		t.Errorf("latest ack %v before trigger %v", cp.LatestAck, cp.TriggerTime)
	}
	if !slices.ContainsFunc(st.History, func(h flinkapi.CheckpointStats) bool { return h.ID == cp.ID }) {
		t.Errorf("history lacks checkpoint %d", cp.ID)
	}
	if st.LatestSavepoint != nil || st.LatestRestored != nil {
		t.Errorf("latest savepoint %+v, restored %+v: want none yet", st.LatestSavepoint, st.LatestRestored)
	}
	s.latestCheckpoint = cp
}

// checkpointDetails: CheckpointDetails answers the statistics of the
// checkpoint found above, with each vertex's state size.
func (s *suite) checkpointDetails(t *testing.T) {
	s.needMain(t)
	cp := s.latestCheckpoint
	if cp == nil {
		t.Skip("needs a completed checkpoint, which Checkpoints did not find")
	}
	ctx := s.ctx(t)
	d, err := s.c.CheckpointDetails(ctx, s.main.id, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != cp.ID || d.Status != flinkapi.CheckpointCompleted || d.ExternalPath != cp.ExternalPath ||
		d.IsSavepoint || !d.TriggerTime.Equal(cp.TriggerTime) || d.NumAcknowledgedSubtasks != d.NumSubtasks {
		t.Errorf("details %+v\ndo not match the statistics' %+v", d, cp)
	}
	// Each vertex of the job has its state size, and they sum to the
	// checkpoint's: what a preflight reads to tell a vertex with state
	// from one without.
	job, err := s.c.Job(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, v := range job.Vertices {
		vs, ok := d.Vertices[v.ID]
		if !ok || vs.StateSize < 0 || vs.Status != flinkapi.CheckpointCompleted {
			t.Errorf("vertex %s (%s) in the details: %+v, %v", v.ID, v.Name, vs, ok)
		}
		sum += vs.StateSize
	}
	if len(d.Vertices) != len(job.Vertices) || sum != d.StateSize {
		t.Errorf("the details show %d vertices of the job's %d, with %d bytes of the checkpoint's %d", len(d.Vertices), len(job.Vertices), sum, d.StateSize)
	}

	// An id the job never had: 404, which is not "job not found".
	_, err = s.c.CheckpointDetails(ctx, s.main.id, cp.ID+1_000_000)
	ae := apiError(t, "CheckpointDetails of an unknown checkpoint", err)
	wantStatus(t, "CheckpointDetails of an unknown checkpoint", ae, 404)
	t.Logf("CheckpointDetails of an unknown checkpoint: %d %q", ae.StatusCode, ae.Message())
	if flinkapi.IsJobNotFound(err) || flinkapi.IsTriggerNotFound(err) {
		t.Errorf("%v: IsJobNotFound %v, IsTriggerNotFound %v; want false, false (the job exists)",
			err, flinkapi.IsJobNotFound(err), flinkapi.IsTriggerNotFound(err))
	}
}

// checkpointConfig: CheckpointConfig answers the interval the job was given.
func (s *suite) checkpointConfig(t *testing.T) {
	s.needMain(t)
	cfg, err := s.c.CheckpointConfig(s.ctx(t), s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Interval != mainSpec.checkpointInterval {
		t.Errorf("interval %v, want %v", cfg.Interval, mainSpec.checkpointInterval)
	}
	if !strings.EqualFold(cfg.Mode, "EXACTLY_ONCE") {
		t.Errorf("mode %q, want exactly once", cfg.Mode)
	}
	if cfg.Timeout <= 0 || cfg.MaxConcurrent != 1 || cfg.StateBackend == "" || cfg.CheckpointStorage == "" {
		t.Errorf("config %+v: want timeout > 0, max concurrent 1, state backend and storage named", cfg)
	}
}

// jobConfig: JobConfig answers the job's name and parallelism, and the
// program's arguments as the test job keeps them (its global job
// parameters: every flag without its dashes).
func (s *suite) jobConfig(t *testing.T) {
	s.needMain(t)
	cfg, err := s.c.JobConfig(s.ctx(t), s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != s.main.id || cfg.Name != mainSpec.name || cfg.Parallelism != 1 {
		t.Errorf("config %+v: want job %s named %q with parallelism 1", cfg, s.main.id, mainSpec.name)
	}
	args := mainSpec.args(s.main.out)
	want := map[string]string{}
	for i := 0; i+1 < len(args); i += 2 {
		want[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	if !maps.Equal(cfg.Parameters, want) {
		t.Errorf("parameters %v, want the program arguments %v", cfg.Parameters, want)
	}
}

// triggerCheckpoint: TriggerCheckpoint with a client trigger id (1.17+)
// completes with the id of a new, completed checkpoint.
func (s *suite) triggerCheckpoint(t *testing.T) {
	s.needMain(t)
	if !s.v.Supports(flinkapi.FeatureCheckpointTrigger) {
		t.Skipf("Flink %v has no checkpoint trigger (1.17+)", s.v)
	}
	ctx := s.ctx(t)
	trigger := flinkapi.NewTriggerID()
	op, err := s.c.TriggerCheckpoint(ctx, s.main.id, flinkapi.CheckpointRequest{TriggerID: trigger})
	if err != nil {
		t.Fatal(err)
	}
	want := flinkapi.Operation{Kind: flinkapi.OpCheckpoint, JobID: s.main.id, TriggerID: trigger}
	if op != want {
		t.Errorf("operation %+v, want %+v", op, want)
	}
	res, err := s.waiter(s.c).Wait(ctx, op, s.tg.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded() || res.CheckpointID <= 0 || res.Location != "" {
		t.Fatalf("result %+v: want COMPLETED with a checkpoint id", res)
	}
	if s.latestCheckpoint != nil && res.CheckpointID <= s.latestCheckpoint.ID {
		t.Errorf("checkpoint id %d, want more than the earlier %d", res.CheckpointID, s.latestCheckpoint.ID)
	}
	// The statistics are cached (rest.cache.checkpoint-statistics.timeout,
	// by default web.refresh-interval): the details may lag the result.
	var d *flinkapi.CheckpointStats
	s.waitFor(t, ctx, fmt.Sprintf("details of checkpoint %d", res.CheckpointID), func() (bool, string) {
		d, err = s.c.CheckpointDetails(ctx, s.main.id, res.CheckpointID)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if d.ID != res.CheckpointID || d.Status != flinkapi.CheckpointCompleted || d.IsSavepoint || d.ExternalPath == "" {
		t.Errorf("details of checkpoint %d: %+v", res.CheckpointID, d)
	}
	// The same trigger id again: the same operation, still completed.
	again, err := s.c.TriggerCheckpoint(ctx, s.main.id, flinkapi.CheckpointRequest{TriggerID: trigger})
	if err != nil || again != want {
		t.Errorf("second trigger with the same id: %+v, %v; want %+v", again, err, want)
	}
	res2, err := s.c.OperationStatus(ctx, op)
	if err != nil || !res2.Succeeded() || res2.CheckpointID != res.CheckpointID {
		t.Errorf("status after the second trigger: %+v, %v; want checkpoint %d", res2, err, res.CheckpointID)
	}
}
