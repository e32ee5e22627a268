package flinkapi

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// The rescale history of real Flink 2.3.0: a job on the adaptive scheduler
// with the history on, rescaled from 1 to 2 by new resource requirements
// (rescales_*.json), one with the history off (rescales_off_*) and one on
// the default scheduler (rescales_default_scheduler_*).
func TestRescaleHistoryRealAnswers(t *testing.T) {
	const version = "2.3.0"
	ctx := context.Background()
	c, mt, _ := newTestClient(t, version)
	jp := "/jobs/" + string(testJob) + "/rescales"

	replay(t, mt, version, "GET", jp+"/history", "rescales_history.json")
	h, err := c.RescaleHistory(ctx, testJob)
	if err != nil || len(h) != 2 {
		t.Fatalf("RescaleHistory = %+v, %v; want 2 rescales", h, err)
	}
	// Newest first: the rescale by new requirements, then the first schedule.
	if h[0].Trigger != RescaleUpdateRequirement || h[1].Trigger != RescaleInitialSchedule {
		t.Errorf("triggers %s, %s; want UPDATE_REQUIREMENT, INITIAL_SCHEDULE", h[0].Trigger, h[1].Trigger)
	}
	for _, r := range h {
		if r.ID.Validate() != nil || r.RequirementsID == "" || r.Attempt != 1 || r.State != RescaleCompleted || r.Reason != RescaleSucceeded ||
			!recent(r.StartTime) || !r.EndTime.After(r.StartTime) || r.Duration() <= 0 {
			t.Errorf("history entry %+v", r)
		}
		if r.Vertices != nil || r.SchedulerStates != nil {
			t.Errorf("history entry %s has vertices or scheduler states; Flink sends them only in the details", r.ID)
		}
		if _, ok := r.Downtime(); ok {
			t.Errorf("history entry %s: Downtime known without scheduler states", r.ID)
		}
	}
	if !h[0].StartTime.After(h[1].EndTime) {
		t.Errorf("the rescale started %v, before the first schedule ended %v", h[0].StartTime, h[1].EndTime)
	}

	replay(t, mt, version, "GET", jp+"/details/"+string(h[0].ID), "rescales_details.json")
	d, err := c.RescaleDetails(ctx, testJob, h[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != h[0].ID || d.State != RescaleCompleted || d.Trigger != RescaleUpdateRequirement || !d.StartTime.Equal(h[0].StartTime) || !d.EndTime.Equal(h[0].EndTime) {
		t.Errorf("details %+v do not match the history's entry %+v", d, h[0])
	}
	if len(d.Vertices) != 2 {
		t.Fatalf("details: %d vertices, want 2: %+v", len(d.Vertices), d.Vertices)
	}
	for id, v := range d.Vertices {
		if v.ID != id || v.Name == "" || v.SlotSharingGroup != "default" || v.Before != 1 || v.After != 2 || v.Desired != 2 || v.Sufficient != 1 {
			t.Errorf("vertex %s: %+v, want parallelism 1 -> 2 (desired 2, sufficient 1)", id, v)
		}
	}
	states := make([]string, len(d.SchedulerStates))
	for i, s := range d.SchedulerStates {
		states[i] = s.State
		if !recent(s.Enter) || s.Leave.Before(s.Enter) || s.Exception != "" {
			t.Errorf("scheduler state %+v", s)
		}
	}
	if want := []string{"Executing", "Restarting", "CreatingExecutionGraph", "Executing"}; !slices.Equal(states, want) {
		t.Errorf("scheduler states %v, want %v", states, want)
	}
	// Executing left at ...2861, entered again at ...2919.
	if dt, ok := d.Downtime(); !ok || dt != 58*time.Millisecond {
		t.Errorf("Downtime = %v, %v; want 58ms, true", dt, ok)
	}
	if d.Duration() != 605*time.Millisecond {
		t.Errorf("Duration = %v, want 605ms", d.Duration())
	}

	unknown := RescaleID("98661c6940539987dce1a1f1a5205597")
	replay(t, mt, version, "GET", jp+"/details/"+string(unknown), "rescales_details_unknown.json")
	_, err = c.RescaleDetails(ctx, testJob, unknown)
	if !IsRescaleNotFound(err) || IsJobNotFound(err) || IsRescaleHistoryUnavailable(err) || IsRetryable(err) {
		t.Errorf("unknown rescale: %v: IsRescaleNotFound %v, IsJobNotFound %v, IsRescaleHistoryUnavailable %v",
			err, IsRescaleNotFound(err), IsJobNotFound(err), IsRescaleHistoryUnavailable(err))
	}
}

func TestRescaleHistoryOffRealAnswers(t *testing.T) {
	const version = "2.3.0"
	ctx := context.Background()
	jp := "/jobs/" + string(testJob) + "/rescales"
	id := RescaleID("fd9f8adcd6a5a419940b02fedcc6ac73")

	// The adaptive scheduler with the history off: an empty history, and
	// no rescale to be found.
	c, mt, _ := newTestClient(t, version)
	replay(t, mt, version, "GET", jp+"/history", "rescales_off_history.json")
	if h, err := c.RescaleHistory(ctx, testJob); err != nil || len(h) != 0 {
		t.Errorf("history off: %+v, %v; want empty, nil", h, err)
	}
	replay(t, mt, version, "GET", jp+"/details/"+string(id), "rescales_off_details.json")
	if _, err := c.RescaleDetails(ctx, testJob, id); !IsRescaleNotFound(err) || IsRescaleHistoryUnavailable(err) {
		t.Errorf("details with the history off: %v, want IsRescaleNotFound", err)
	}

	// The default scheduler: 404, the history is unavailable.
	c, mt, _ = newTestClient(t, version)
	replay(t, mt, version, "GET", jp+"/history", "rescales_default_scheduler_history.json")
	mt.RegisterResponder("GET", testBase+jp+"/details/"+string(id), httpmock.NewStringResponder(404, real(t, version, "rescales_default_scheduler_details.json")))
	_, err := c.RescaleHistory(ctx, testJob)
	if !IsRescaleHistoryUnavailable(err) || IsJobNotFound(err) || IsRescaleNotFound(err) || !errors.Is(err, ErrNotFound) {
		t.Errorf("history on the default scheduler: %v, want IsRescaleHistoryUnavailable only", err)
	}
	_, err = c.RescaleDetails(ctx, testJob, id)
	if !IsRescaleHistoryUnavailable(err) || IsJobNotFound(err) || IsRescaleNotFound(err) {
		t.Errorf("details on the default scheduler: %v, want IsRescaleHistoryUnavailable only", err)
	}

	// An unknown job.
	c, mt, _ = newTestClient(t, version)
	replay(t, mt, version, "GET", jp+"/history", "rescales_history_unknown_job.json")
	if _, err := c.RescaleHistory(ctx, testJob); !IsJobNotFound(err) || IsRescaleHistoryUnavailable(err) {
		t.Errorf("history of an unknown job: %v, want IsJobNotFound", err)
	}
}

// Before 2.3 the rescale calls fail with ErrUnsupported, sending nothing;
// malformed ids fail with ErrInvalidInput, sending nothing.
func TestRescaleHistoryUnsupported(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{"1.20.5", "2.2.0"} {
		c, _, rec := newTestClient(t, version)
		errs := map[string]error{}
		_, errs["RescaleHistory"] = c.RescaleHistory(ctx, testJob)
		_, errs["RescaleDetails"] = c.RescaleDetails(ctx, testJob, "98661c6940539987dce1a1f1a5205597")
		for name, err := range errs {
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Feature != FeatureRescaleHistory || ue.Since != (Version{2, 3, 0}) || !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: %s: %v, want an UnsupportedError for FeatureRescaleHistory", version, name, err)
			}
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%s: %d requests sent, want none", version, n)
		}
	}
	c, _, rec := newTestClient(t, "2.3.0")
	if _, err := c.RescaleDetails(ctx, testJob, "not-a-uuid"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("malformed rescale id: %v, want ErrInvalidInput", err)
	}
	if _, err := c.RescaleHistory(ctx, "0123"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("malformed job id: %v, want ErrInvalidInput", err)
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("%d requests sent for malformed ids, want none", n)
	}
	if id, err := ParseRescaleID("F562015E369BDB6A018B6A2B6BA8ED84"); err != nil || id != "f562015e369bdb6a018b6a2b6ba8ed84" {
		t.Errorf("ParseRescaleID = %q, %v", id, err)
	}
}

func TestRescaleDowntime(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	span := func(state string, enter int64) SchedulerStateSpan {
		return SchedulerStateSpan{State: state, Enter: at(enter)}
	}
	for _, tc := range []struct {
		name   string
		states []SchedulerStateSpan
		want   time.Duration
		ok     bool
	}{
		{"no states", nil, 0, false},
		{"never left Executing", []SchedulerStateSpan{span("Executing", 10)}, 0, true},
		{"restarted", []SchedulerStateSpan{span("Executing", 10), span("Restarting", 100), span("WaitingForResources", 150), span("CreatingExecutionGraph", 400), span("Executing", 420)}, 320 * time.Millisecond, true},
		{"not running again", []SchedulerStateSpan{span("Executing", 10), span("Restarting", 100), span("WaitingForResources", 150)}, 0, false},
		{"initial schedule", []SchedulerStateSpan{span("WaitingForResources", 5), span("CreatingExecutionGraph", 50), span("Executing", 60)}, 55 * time.Millisecond, true},
		{"with leave times", []SchedulerStateSpan{{State: "Executing", Enter: at(10), Leave: at(97)}, span("Restarting", 100), span("Executing", 200)}, 103 * time.Millisecond, true},
		{"clock went back", []SchedulerStateSpan{span("Restarting", 100), span("Executing", 90)}, 0, false},
	} {
		r := &Rescale{SchedulerStates: tc.states}
		if got, ok := r.Downtime(); got != tc.want || ok != tc.ok {
			t.Errorf("%s: Downtime = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if d := (&Rescale{StartTime: at(10)}).Duration(); d != 0 {
		t.Errorf("Duration of a rescale in progress = %v, want 0", d)
	}
	if RescaleState("").IsTerminal() || !RescaleIgnored.IsTerminal() {
		t.Error("RescaleState.IsTerminal: want only the zero state in progress")
	}
}

// An answer without a usable rescale id, or one that is not Flink's JSON,
// is a DecodeError.
func TestRescaleDetailsUnusableAnswer(t *testing.T) {
	ctx := context.Background()
	c, mt, _ := newTestClient(t, "2.3.0")
	id := RescaleID("98661c6940539987dce1a1f1a5205597")
	jp := testBase + "/jobs/" + string(testJob) + "/rescales"
	mt.RegisterResponder("GET", jp+"/details/"+string(id), httpmock.NewStringResponder(200, `{"rescaleUuid":"x"}`))
	if _, err := c.RescaleDetails(ctx, testJob, id); !errors.Is(err, ErrDecode) {
		t.Errorf("details without a usable id: %v, want ErrDecode", err)
	}
	mt.RegisterResponder("GET", jp+"/history", httpmock.NewStringResponder(200, `{"rescales":[]}`))
	if _, err := c.RescaleHistory(ctx, testJob); !errors.Is(err, ErrDecode) {
		t.Errorf("history that is not a list: %v, want ErrDecode", err)
	}
}
