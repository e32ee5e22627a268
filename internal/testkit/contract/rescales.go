package contract

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// rescaleHistoryRefused checks, on a cluster older than Flink 2.3, that
// the rescale history calls fail with ErrUnsupported and send nothing.
func (s *suite) rescaleHistoryRefused(t *testing.T) {
	ctx := s.ctx(t)
	ct := &countingTransport{next: http.DefaultTransport}
	c, err := flinkapi.NewClient(s.tg.URL, flinkapi.WithHTTPClient(&http.Client{Transport: ct}), flinkapi.WithFlinkVersion(s.v.String()))
	if err != nil {
		t.Fatal(err)
	}
	job := flinkapi.NewJobID()
	calls := map[string]error{}
	_, calls["RescaleHistory"] = c.RescaleHistory(ctx, job)
	_, calls["RescaleDetails"] = c.RescaleDetails(ctx, job, flinkapi.RescaleID(flinkapi.NewJobID()))
	for name, err := range calls {
		var ue *flinkapi.UnsupportedError
		if !errors.As(err, &ue) || ue.Feature != flinkapi.FeatureRescaleHistory || ue.Since != (flinkapi.Version{Major: 2, Minor: 3}) {
			t.Errorf("%s on Flink %s: %v, want an UnsupportedError for FeatureRescaleHistory since 2.3", name, s.v, err)
		}
	}
	if n := ct.n.Load(); n != 0 {
		t.Errorf("the refused calls sent %d requests, want none", n)
	}
	if _, err := s.c.RescaleHistory(ctx, job); !errors.Is(err, flinkapi.ErrUnsupported) {
		t.Errorf("RescaleHistory with the version asked of the cluster: %v, want ErrUnsupported", err)
	}
}

// rescaleHistory: before Flink 2.3 the rescale history calls are refused
// without a request. On 2.3, the main job (default scheduler) has no
// history: both calls answer IsRescaleHistoryUnavailable; an unknown job
// answers IsJobNotFound. The history of a job on the adaptive scheduler is
// checked by ResourceRequirementsAdaptive/RescaleHistory.
func (s *suite) rescaleHistory(t *testing.T) {
	if !s.v.Supports(flinkapi.FeatureRescaleHistory) {
		s.rescaleHistoryRefused(t)
		return
	}
	s.needMain(t)
	ctx := s.ctx(t)
	_, err := s.c.RescaleHistory(ctx, s.main.id)
	if !flinkapi.IsRescaleHistoryUnavailable(err) || flinkapi.IsJobNotFound(err) {
		t.Errorf("RescaleHistory on the default scheduler: %v, want IsRescaleHistoryUnavailable (and not IsJobNotFound)", err)
	}
	_, err = s.c.RescaleDetails(ctx, s.main.id, flinkapi.RescaleID(flinkapi.NewJobID()))
	if !flinkapi.IsRescaleHistoryUnavailable(err) || flinkapi.IsRescaleNotFound(err) {
		t.Errorf("RescaleDetails on the default scheduler: %v, want IsRescaleHistoryUnavailable", err)
	}
	if _, err := s.c.RescaleHistory(ctx, flinkapi.NewJobID()); !flinkapi.IsJobNotFound(err) || flinkapi.IsRescaleHistoryUnavailable(err) {
		t.Errorf("RescaleHistory of an unknown job: %v, want IsJobNotFound", err)
	}
}

// rescaleHistoryAdaptive checks, on Flink 2.3 with the adaptive scheduler
// and its rescale history on, that job j (whose vertices ran with the
// parallelism of d and whose upper bounds were raised to 2 at raised) is
// rescaled in place: the history gains a completed UPDATE_REQUIREMENT
// rescale after raised, newest first, above the job's first schedule; its
// details give every vertex 1 -> 2 and a downtime; the job runs on with
// parallelism 2; an unknown rescale answers IsRescaleNotFound.
func (s *suite) rescaleHistoryAdaptive(t *testing.T, ctx context.Context, c *flinkapi.Client, j *job, d *flinkapi.JobDetails, raised time.Time) {
	var h []flinkapi.Rescale
	s.waitFor(t, ctx, "a completed UPDATE_REQUIREMENT rescale in the history", func() (bool, string) {
		var err error
		h, err = c.RescaleHistory(ctx, j.id)
		if err != nil {
			return false, err.Error()
		}
		return len(h) > 0 && h[0].Trigger == flinkapi.RescaleUpdateRequirement && h[0].State.IsTerminal(), describeRescales(h)
	})
	if len(h) < 2 {
		t.Fatalf("history %s: want the rescale above the first schedule", describeRescales(h))
	}
	r, first := h[0], h[len(h)-1]
	if first.Trigger != flinkapi.RescaleInitialSchedule || first.State != flinkapi.RescaleCompleted {
		t.Errorf("oldest rescale %s %s, want the first schedule COMPLETED", first.Trigger, first.State)
	}
	s.checkTime(t, "the first schedule's start", first.StartTime, j.submitted)
	if r.State != flinkapi.RescaleCompleted || r.Reason != flinkapi.RescaleSucceeded {
		t.Errorf("rescale %s: %s %s, want COMPLETED SUCCEEDED", r.ID, r.State, r.Reason)
	}
	s.checkTime(t, "the rescale's start", r.StartTime, raised)
	s.checkTime(t, "the rescale's end", r.EndTime, r.StartTime)
	if r.Vertices != nil || r.SchedulerStates != nil {
		t.Errorf("history entry with vertices or scheduler states: %+v", r)
	}

	det, err := c.RescaleDetails(ctx, j.id, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if det.ID != r.ID || det.Trigger != r.Trigger || det.State != r.State || !det.StartTime.Equal(r.StartTime) || !det.EndTime.Equal(r.EndTime) {
		t.Errorf("details %+v disagree with the history's entry %+v", det, r)
	}
	if len(det.Vertices) != len(d.Vertices) {
		t.Errorf("details: %d vertices, the job has %d", len(det.Vertices), len(d.Vertices))
	}
	for _, v := range d.Vertices {
		got, ok := det.Vertices[v.ID]
		if !ok || got.Before != v.Parallelism || got.After != 2 || got.Desired != 2 || got.Name != v.Name {
			t.Errorf("vertex %s (%s) in the details: %+v, %v; want %d -> 2", v.ID, v.Name, got, ok, v.Parallelism)
		}
	}
	down, ok := det.Downtime()
	if !ok || down > det.Duration() {
		t.Errorf("Downtime = %v, %v (duration %v, scheduler states %+v); want a known downtime within the rescale", down, ok, det.Duration(), det.SchedulerStates)
	}
	t.Logf("in-place rescale %s: %d -> 2, duration %v, downtime %v", r.ID, d.Vertices[0].Parallelism, det.Duration(), down)

	after := s.waitRunning(t, ctx, c, j.id)
	for _, v := range after.Vertices {
		if v.Parallelism != 2 {
			t.Errorf("after the rescale vertex %s runs with parallelism %d, want 2", v.Name, v.Parallelism)
		}
	}
	if _, err := c.RescaleDetails(ctx, j.id, flinkapi.RescaleID(flinkapi.NewJobID())); !flinkapi.IsRescaleNotFound(err) || flinkapi.IsJobNotFound(err) {
		t.Errorf("RescaleDetails of an unknown rescale: %v, want IsRescaleNotFound", err)
	}
}

func describeRescales(h []flinkapi.Rescale) string {
	if len(h) == 0 {
		return "empty (is web.adaptive-scheduler.rescale-history.size above 0?)"
	}
	out := ""
	for i, r := range h {
		if i > 0 {
			out += ", "
		}
		out += string(r.Trigger) + " " + string(r.State)
		if r.State == "" {
			out += "in progress"
		}
	}
	return out
}
