package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// saturate makes the job's counter vertex busy all the time at rate
// records per second, and its source back-pressured.
func (k *cluster) saturate(rate float64) {
	k.t.Helper()
	d, err := k.c.Job(k.t.Context(), k.st.JobID)
	if err != nil || len(d.Vertices) != 2 {
		k.t.Fatalf("Job: %+v, %v", d, err)
	}
	if err := k.srv.SetVertexMetrics(d.ID, d.Vertices[0].ID, flinktest.VertexMetrics{BusyMsPerSecond: 5, BackPressuredMsPerSecond: 900,
		IdleMsPerSecond: 95, RecordsOutPerSecond: rate}); err != nil {
		k.t.Fatal(err)
	}
	if err := k.srv.SetVertexMetrics(d.ID, d.Vertices[1].ID, flinktest.VertexMetrics{BusyMsPerSecond: 1000, RecordsInPerSecond: rate,
		RecordsOutPerSecond: rate}); err != nil {
		k.t.Fatal(err)
	}
}

// TestControllerAutoscale: with Autoscale enabled the controller samples
// the vertices (one request per call, within MaxRequestsPerCall), and once
// a window of samples shows the counter saturated it rescales the job
// through the Rescale path to the recommended parallelism, while the
// spec keeps its own; it does not scale back to the spec's parallelism,
// holds still within the cool-down, scales again after it, and a new
// parallelism in the spec wins. Without Autoscale nothing is sampled.
func TestControllerAutoscale(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Parallelism = 1
	k.settle("create", spec)
	k.saturate(33)
	k.run(spec, 3*time.Minute)
	if n := count(k.srv, "GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics"); n != 0 || k.st.Autoscale.JobID != "" {
		t.Fatalf("autoscale off: %d metric requests, status %+v", n, k.st.Autoscale)
	}

	spec.Autoscale = policy.AutoscalePolicy{Enabled: true, Window: policy.Duration(time.Minute), Stabilization: policy.Duration(10 * time.Second),
		CoolDown: policy.Duration(5 * time.Minute)}
	first := k.st.JobID
	start := k.srv.Clock().Now()
	k.until("autoscale", spec, 200, func(st *JobStatus) bool { return st.Action == ActionAutoscale })
	if took := k.srv.Clock().Now().Sub(start); took < 30*time.Second {
		t.Errorf("rescaled %v after sampling began, before samples spanned half the window", took)
	}
	if k.st.Autoscale.Reason != string(policy.ReasonScaleUp) || k.st.Autoscale.Target != 2 || k.st.Target.Parallelism != 2 {
		t.Errorf("autoscale: %+v, target template parallelism %d; want ScaleUp to 2", k.st.Autoscale, k.st.Target.Parallelism)
	}
	k.until("autoscaled", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.Converged(spec) })
	if k.st.JobID == first || k.job().Parallelism != 2 || k.st.Deployed.Parallelism != 2 || k.st.Progress.Outcome != OutcomeSucceeded {
		t.Fatalf("after the autoscale: job %s (was %s) at parallelism %d, deployed %d, outcome %s", k.st.JobID, first, k.job().Parallelism,
			k.st.Deployed.Parallelism, k.st.Progress.Outcome)
	}
	second := k.st.JobID
	// Saturated again at once: the cool-down holds the parallelism.
	k.saturate(70)
	k.run(spec, 4*time.Minute)
	if k.st.JobID != second || k.st.Action != ActionAutoscale || k.st.Autoscale.Reason != string(policy.ReasonScaleCoolDown) {
		t.Fatalf("within the cool-down: job %s (was %s), action %s, autoscale %+v", k.st.JobID, second, k.st.Action, k.st.Autoscale)
	}
	k.until("second autoscale", spec, 400, func(st *JobStatus) bool { return st.JobID != second && !st.InFlight() })
	if p := k.job().Parallelism; p != 4 || k.st.Autoscale.LastScale.Before(k.srv.Clock().Now().Add(-3*time.Minute)) {
		t.Errorf("after the cool-down: parallelism %d, want 4; autoscale %+v", p, k.st.Autoscale)
	}
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
	}
	// The spec's own new parallelism wins.
	spec.Job.Parallelism = 3
	k.settle("spec rescale", spec)
	if k.job().Parallelism != 3 || k.st.Action != ActionRescale {
		t.Errorf("spec parallelism 3: job at %d, action %s", k.job().Parallelism, k.st.Action)
	}
	k.run(spec, 2*time.Minute)
	if k.job().Parallelism != 3 || !k.st.Converged(spec) {
		t.Errorf("at rest: parallelism %d, converged %v, autoscale %s", k.job().Parallelism, k.st.Converged(spec), k.st.Autoscale.Message)
	}
}

// TestAutoscaleStatusDeepCopy: a copy shares no slice with the original.
func TestAutoscaleStatusDeepCopy(t *testing.T) {
	a := goldenStatus3.Autoscale
	b := a.DeepCopy()
	b.Vertices[0].Inputs[0], b.Vertices[0].Samples[0].RecordsInMilli = "x", 1
	if a.Vertices[0].Inputs[0] == "x" || a.Vertices[0].Samples[0].RecordsInMilli == 1 {
		t.Error("DeepCopy shares the vertices' slices")
	}
	if (*AutoscaleStatus)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil")
	}
}

// TestControllerAutoscaleRelists: a source whose pending records metric
// goes away (Flink then answers nothing for the names asked) has its
// metrics listed again, and its samples go on without it.
func TestControllerAutoscaleRelists(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Autoscale = policy.AutoscalePolicy{Enabled: true, Window: policy.Duration(time.Hour)}
	k.settle("create", spec)
	d, err := k.c.Job(t.Context(), k.st.JobID)
	if err != nil {
		t.Fatal(err)
	}
	src := d.Vertices[0].ID
	m := flinktest.VertexMetrics{BusyMsPerSecond: 5, IdleMsPerSecond: 995, RecordsOutPerSecond: 10, PendingRecords: 70, HasPending: true}
	if err := k.srv.SetVertexMetrics(k.st.JobID, src, m); err != nil {
		t.Fatal(err)
	}
	source := func() *AutoscaleVertex {
		for i := range k.st.Autoscale.Vertices {
			if v := &k.st.Autoscale.Vertices[i]; v.ID == src {
				return v
			}
		}
		return &AutoscaleVertex{}
	}
	k.until("pending sampled", spec, 100, func(*JobStatus) bool {
		s := source().Samples
		return len(s) > 0 && s[len(s)-1].HasPending && s[len(s)-1].PendingRecords == 70
	})
	if source().PendingMetric != flinktest.PendingRecordsName {
		t.Fatalf("pending metric %q", source().PendingMetric)
	}
	m.HasPending = false
	if err := k.srv.SetVertexMetrics(k.st.JobID, src, m); err != nil {
		t.Fatal(err)
	}
	n := len(source().Samples)
	k.until("sampled again without pending records", spec, 100, func(*JobStatus) bool {
		s := source().Samples
		return len(s) > n && !s[len(s)-1].HasPending
	})
	if source().PendingMetric != "" || !source().Listed {
		t.Errorf("source after its metric went: %+v", *source())
	}
}

// TestControllerAutoscaleInPlace: on the adaptive scheduler the
// autoscaler's rescale keeps the job and sets its parallelism in place;
// the samples of the old parallelism are dropped, and the cool-down
// holds the new one although the load set for the job stays.
func TestControllerAutoscaleInPlace(t *testing.T) {
	k := newCluster(t, true, flinktest.WithAdaptiveScheduler())
	spec := k.spec("/out")
	spec.Job.Parallelism = 1
	spec.Autoscale = policy.AutoscalePolicy{Enabled: true, Window: policy.Duration(time.Minute), Stabilization: policy.Duration(10 * time.Second)}
	k.settle("create", spec)
	job := k.st.JobID
	k.saturate(33)
	k.until("autoscaled", spec, 300, func(st *JobStatus) bool { return st.Action == ActionAutoscale && !st.InFlight() })
	if k.st.JobID != job || k.st.Progress.Rescale.Path != policy.RescaleInPlace || k.job().Parallelism != 2 || k.st.Progress.Outcome != OutcomeSucceeded {
		t.Fatalf("in place: job %s (was %s), path %s, parallelism %d, outcome %s", k.st.JobID, job, k.st.Progress.Rescale.Path, k.job().Parallelism,
			k.st.Progress.Outcome)
	}
	k.call(spec, false)
	for _, v := range k.st.Autoscale.Vertices {
		if v.Parallelism != 2 || len(v.Samples) > 1 {
			t.Errorf("vertex %s after the rescale: parallelism %d, %d samples; want 2 and the old ones dropped", v.ID, v.Parallelism, len(v.Samples))
		}
	}
	k.run(spec, 5*time.Minute)
	if k.job().Parallelism != 2 || k.st.Autoscale.Reason != string(policy.ReasonScaleCoolDown) {
		t.Errorf("within the cool-down: parallelism %d, autoscale %s", k.job().Parallelism, k.st.Autoscale.Message)
	}
}
