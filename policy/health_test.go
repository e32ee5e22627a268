package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/plaincheck"
	"github.com/google/go-cmp/cmp"
)

// sampled builds a history of a job started startedAgo ago, sampled every
// step until now in state s, with restarts growing by restartsPerSample,
// a checkpoint completed cpAgo ago (0: none) and savepoint failures.
func sampled(s flinkapi.JobState, startedAgo, step time.Duration, restartsPerSample int64) HealthHistory {
	h := HealthHistory{JobID: jobID, Started: ago(startedAgo), CheckpointInterval: Duration(time.Minute), CheckpointTimeout: Duration(time.Minute)}
	var n int64
	for at := ago(startedAgo); !at.After(now); at = at.Add(step) {
		h.Samples = append(h.Samples, HealthSample{Time: at, State: s, StateSince: ago(startedAgo), Restarts: n,
			CompletedCheckpoints: int64(now.Sub(at) / time.Minute), LatestCheckpoint: at.Add(-30 * time.Second)})
		n += restartsPerSample
	}
	return h
}

func lastSample(h *HealthHistory) *HealthSample { return &h.Samples[len(h.Samples)-1] }

// TestEvaluateHealth has one case per verdict and problem, and one per
// action taken on an unhealthy job.
func TestEvaluateHealth(t *testing.T) {
	restart := HealthPolicy{Action: HealthRestartFromLatestState}
	running := observe(flinkapi.JobRunning)
	tests := []struct {
		name    string
		p       HealthPolicy
		h       func() HealthHistory
		obs     Observations
		state   HealthState
		problem Reason
		action  Action
		reason  Reason
		restore RestorePoint
		msg     string // a part of the message
	}{
		{name: "healthy", h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0) }, obs: running,
			state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy, msg: "RUNNING and healthy"},
		{name: "invalid policy", p: HealthPolicy{Window: -1}, h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0) }, obs: running,
			state: NotJudged, problem: ReasonInvalidPolicy, action: ActionBlock, reason: ReasonInvalidPolicy, msg: `window "-1ns"`},
		{name: "JobManager unreachable", h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 5) },
			obs: func() Observations {
				o := running
				o.JobManagerReachable = false
				o.LastContact = ago(time.Minute)
				return o
			}(),
			state: NotJudged, problem: ReasonJobManagerUnreachable, action: ActionNone, reason: ReasonJobManagerUnreachable, msg: "last answer 1m ago"},
		{name: "no samples", h: func() HealthHistory { return HealthHistory{JobID: jobID} }, obs: running,
			state: NotJudged, problem: ReasonNoHealthData, action: ActionNone, reason: ReasonNoHealthData},
		{name: "failed job never unhealthy", h: func() HealthHistory { return sampled(flinkapi.JobFailed, time.Hour, time.Minute, 5) }, obs: observe(flinkapi.JobFailed),
			state: NotJudged, problem: ReasonJobEnded, action: ActionNone, reason: ReasonJobEnded, msg: "the job is FAILED"},
		{name: "missing job", h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 5) }, obs: observe(""),
			state: NotJudged, problem: ReasonJobEnded, action: ActionNone, reason: ReasonJobEnded, msg: "does not know the job"},
		{name: "warming up", h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Minute, 10*time.Second, 5) }, obs: running,
			state: NotJudged, problem: ReasonWarmingUp, action: ActionNone, reason: ReasonWarmingUp, msg: "judged once it has run for 3m"},
		{name: "too many restarts", h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1) }, obs: running,
			state: Unhealthy, problem: ReasonTooManyRestarts, action: ActionNone, reason: ReasonTooManyRestarts, msg: "restarted the job 10 times within 10m (limit 3); reported only"},
		{name: "restarts at the limit", p: HealthPolicy{MaxRestarts: 10}, h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1) }, obs: running,
			state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},
		{name: "restarts long ago", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			for i := range h.Samples {
				if h.Samples[i].Time.Before(ago(20 * time.Minute)) {
					h.Samples[i].Restarts = int64(i)
				} else {
					h.Samples[i].Restarts = 40
				}
			}
			return h
		}, obs: running, state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},
		{name: "restarts unknown", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1)
			lastSample(&h).Restarts = -1
			return h
		}, obs: running, state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},
		{name: "no checkpoint progress", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			lastSample(&h).LatestCheckpoint = ago(4 * time.Minute)
			return h
		}, obs: running, state: Unhealthy, problem: ReasonNoCheckpointProgress, action: ActionNone, reason: ReasonNoCheckpointProgress,
			msg: "no checkpoint for 4m (limit 3m"},
		{name: "no checkpoint progress by count", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			for i := range h.Samples {
				h.Samples[i].LatestCheckpoint = time.Time{}
				h.Samples[i].CompletedCheckpoints = min(int64(i), 50)
			}
			return h
		}, obs: running, state: Unhealthy, problem: ReasonNoCheckpointProgress, action: ActionNone, reason: ReasonNoCheckpointProgress,
			msg: "no checkpoint for 10m (limit 3m, 50 completed"},
		{name: "checkpoint window of the policy", p: HealthPolicy{CheckpointWindow: Duration(5 * time.Minute)}, h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			lastSample(&h).LatestCheckpoint = ago(4 * time.Minute)
			return h
		}, obs: running, state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},
		{name: "no checkpointing", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			h.CheckpointInterval = 0
			lastSample(&h).LatestCheckpoint = time.Time{}
			return h
		}, obs: running, state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},
		{name: "savepoints failing", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			lastSample(&h).SavepointFailures = 3
			return h
		}, obs: running, state: Unhealthy, problem: ReasonSavepointsFailing, action: ActionNone, reason: ReasonSavepointsFailing,
			msg: "3 savepoints failed in a row (limit 3)"},
		{name: "stuck restarting", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			l := lastSample(&h)
			l.State, l.StateSince = flinkapi.JobRestarting, ago(6*time.Minute)
			return h
		}, obs: observe(flinkapi.JobRestarting), state: Unhealthy, problem: ReasonJobStuck, action: ActionNone, reason: ReasonJobStuck,
			msg: "RESTARTING for 6m, longer than the limit of 5m"},
		{name: "stuck initializing, since from the samples", h: func() HealthHistory {
			h := sampled(flinkapi.JobInitializing, 7*time.Minute, time.Minute, 0)
			for i := range h.Samples {
				h.Samples[i].StateSince = time.Time{}
			}
			return h
		}, obs: observe(flinkapi.JobInitializing), state: Unhealthy, problem: ReasonJobStuck, action: ActionNone, reason: ReasonJobStuck,
			msg: "INITIALIZING for 7m"},
		{name: "restarting briefly", h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			l := lastSample(&h)
			l.State, l.StateSince = flinkapi.JobRestarting, ago(time.Minute)
			return h
		}, obs: observe(flinkapi.JobRestarting), state: Healthy, problem: ReasonHealthy, action: ActionNone, reason: ReasonHealthy},

		// Actions under RestartFromLatestState.
		{name: "restart from the newest state", p: restart, h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1) },
			obs:   withCheckpoint(withSavepoint(running, 2*time.Hour), 5*time.Minute),
			state: Unhealthy, problem: ReasonTooManyRestarts, action: ActionCancelFirst, reason: ReasonRestartUnhealthyJob,
			restore: RestorePoint{Kind: KindCheckpoint, Path: "s3://cp/chk-5m", Time: ago(5 * time.Minute)},
			msg:     "cancel it, then restore from checkpoint s3://cp/chk-5m (5m old, limit 24h)"},
		{name: "restart without young state blocks", p: restart, h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1) },
			obs:   withSavepoint(running, 30*time.Hour),
			state: Unhealthy, problem: ReasonTooManyRestarts, action: ActionBlock, reason: ReasonNoRecentState,
			msg: "not restarted: no state within the limit of 24h (newest: savepoint 30h old)"},
		{name: "restart waits for a savepoint in flight", p: restart, h: func() HealthHistory { return sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1) },
			obs:   withInFlight(withCheckpoint(running, time.Minute), time.Minute, 9*time.Minute),
			state: Unhealthy, problem: ReasonTooManyRestarts, action: ActionWait, reason: ReasonSavepointInProgress,
			msg: "restarted the job 10 times within 10m (limit 3); a savepoint is in flight"},
		{name: "cancelling job is not restarted", p: restart, h: func() HealthHistory {
			h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
			l := lastSample(&h)
			l.State, l.StateSince = flinkapi.JobCancelling, ago(10*time.Minute)
			return h
		}, obs: withCheckpoint(observe(flinkapi.JobCancelling), time.Minute), state: Unhealthy, problem: ReasonJobStuck, action: ActionBlock, reason: ReasonJobStuck,
			msg: "a CANCELLING job cannot be restarted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h()
			d := EvaluateHealth(tc.p, h, tc.obs, now)
			got := []any{d.State, d.Problem, d.Action, d.Reason, d.RestorePoint}
			want := []any{tc.state, tc.problem, tc.action, tc.reason, tc.restore}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state, problem, action, reason, restore point (-want +got):\n%s\nmessage: %s", diff, d.Message())
			}
			if !strings.Contains(d.Message(), tc.msg) {
				t.Errorf("message %q does not contain %q", d.Message(), tc.msg)
			}
			for _, v := range healthViolations(tc.p, h, tc.obs, now, d) {
				t.Error(v)
			}
		})
	}
}

// healthViolations lists the invariants a health decision breaks.
func healthViolations(p HealthPolicy, h HealthHistory, obs Observations, at time.Time, d HealthDecision) []string {
	var v []string
	bad := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	msg := d.Message()
	if msg == "" || strings.ContainsAny(msg, "\r\n") || strings.Contains(msg, "%!") {
		bad("bad message %q", msg)
	}
	if d.Problem == "" || d.Reason == "" {
		bad("empty problem or reason")
	}
	switch d.State {
	case Healthy, NotJudged:
		if d.Action != ActionNone && d.Reason != ReasonInvalidPolicy {
			bad("%s job with action %s", d.State, d.Action)
		}
	case Unhealthy:
	default:
		bad("unknown state %q", d.State)
	}
	if p.Validate() != nil {
		if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy {
			bad("invalid policy gave %s/%s", d.Action, d.Reason)
		}
		return v
	}
	pd := p.WithDefaults()
	if len(h.Samples) > 0 && lastSample(&h).State.IsTerminal() && d.State == Unhealthy {
		bad("terminal job %s judged unhealthy", lastSample(&h).State)
	}
	if d.State == Unhealthy && pd.Action == HealthReport && d.Action != ActionNone {
		bad("Report policy acted: %s", d.Action)
	}
	switch d.Action {
	case ActionNone, ActionWait, ActionBlock:
		if d.RestorePoint != (RestorePoint{}) {
			bad("%s with a restore point", d.Action)
		}
	case ActionCancelFirst:
		rp := d.RestorePoint
		if !rp.IsSet() || rp.Time.IsZero() {
			bad("restart without state: %+v", rp)
		}
		if age(rp.Time, at) > pd.MaxStateAge.Std() {
			bad("restore point %v old, limit %v", age(rp.Time, at), pd.MaxStateAge)
		}
		if !obs.JobManagerReachable || obs.Job == nil {
			bad("restart without a reachable job")
		}
		if lastSample(&h).State == flinkapi.JobCancelling {
			bad("restart of a CANCELLING job")
		}
		if savepointInFlight(&obs.Savepoint) && at.Before(savepointDeadline(&obs.Savepoint, defaultSavepointDeadline.Std(), at)) {
			bad("restart while a savepoint is in flight")
		}
	default:
		bad("unexpected action %s", d.Action)
	}
	if d.Action == ActionWait && (!d.Deadline.After(at) || d.RequeueAfter <= 0 || d.RequeueAfter > d.Deadline.Sub(at)) {
		bad("Wait with deadline %v, requeue %v", d.Deadline, d.RequeueAfter)
	}
	if d.RequeueAfter < 0 || d.RequeueAfter > defaultPollInterval {
		bad("RequeueAfter %v", d.RequeueAfter)
	}
	return v
}

// genHistory draws a random history around g.now.
func (g *gen) healthHistory() HealthHistory {
	states := append(append([]flinkapi.JobState{}, allJobStates...), "SOMETHING_NEW")
	h := HealthHistory{JobID: jobID}
	if g.chance(0.8) {
		h.Started = g.timeNear(10*time.Minute, 3*time.Minute)
	}
	if g.chance(0.7) {
		h.CheckpointInterval = Duration(g.dur(5 * time.Minute))
		h.CheckpointTimeout = Duration(g.dur(10 * time.Minute))
	}
	n := g.r.IntN(12)
	at := g.now.Add(-g.dur(2 * time.Hour))
	var restarts int64
	for range n {
		at = at.Add(g.dur(15 * time.Minute))
		restarts += int64(g.r.IntN(3))
		s := HealthSample{Time: at, State: states[g.r.IntN(len(states))], Restarts: restarts,
			CompletedCheckpoints: int64(g.r.IntN(4)), SavepointFailures: g.r.IntN(5)}
		if g.chance(0.1) {
			s.Restarts = -1
		}
		if g.chance(0.6) {
			s.StateSince = g.timeNear(5 * time.Minute)
		}
		if g.chance(0.6) {
			s.LatestCheckpoint = g.timeNear(3 * time.Minute)
		}
		h.Samples = append(h.Samples, s)
	}
	return h
}

func (g *gen) healthPolicy() HealthPolicy {
	p := HealthPolicy{
		MaxRestarts:          g.r.IntN(5),
		Window:               g.pickDur(0, time.Minute, 10*time.Minute),
		MaxSavepointFailures: g.r.IntN(4),
		TransitionTimeout:    g.pickDur(0, time.Minute, 5*time.Minute),
		MaxStateAge:          g.pickDur(0, time.Hour, 24*time.Hour),
	}
	if g.chance(0.4) {
		p.CheckpointWindow = g.pickDur(time.Minute, 10*time.Minute)
	}
	if g.chance(0.5) {
		p.Action = HealthRestartFromLatestState
	}
	if g.chance(0.02) {
		p.Action = "Bogus"
	}
	return p
}

// TestPropertyHealth checks every invariant on random histories,
// observations and policies, and that the inputs are left alone.
func TestPropertyHealth(t *testing.T) {
	for _, seed := range []uint64{11, 12, 13} {
		g := newGen(seed)
		for i := range propertyRuns {
			p := g.healthPolicy()
			h := g.healthHistory()
			obs := g.observations(p.WithDefaults().MaxStateAge.Std())
			before := h.DeepCopy()
			d := EvaluateHealth(p, h, obs, g.now)
			if v := healthViolations(p, h, obs, g.now, d); len(v) > 0 {
				t.Fatalf("seed %d run %d: %v\npolicy %+v\nhistory %+v\ndecision %+v\nmessage %s", seed, i, v, p, h, d, d.Message())
			}
			if !reflect.DeepEqual(*before, h) {
				t.Fatalf("seed %d run %d: EvaluateHealth changed the history", seed, i)
			}
			if again := EvaluateHealth(p, h, obs, g.now); again != d {
				t.Fatalf("seed %d run %d: not deterministic", seed, i)
			}
		}
	}
}

// TestPropertyHealthTerminal: a job whose newest sample is FINISHED,
// CANCELED, FAILED or SUSPENDED is never unhealthy and never acted on,
// whatever its history says.
func TestPropertyHealthTerminal(t *testing.T) {
	g := newGen(14)
	terminal := []flinkapi.JobState{flinkapi.JobFinished, flinkapi.JobCanceled, flinkapi.JobFailed, flinkapi.JobSuspended}
	for i := range propertyRuns {
		p := g.healthPolicy()
		p.Action = HealthRestartFromLatestState
		h := g.healthHistory()
		h.Samples = append(h.Samples, HealthSample{Time: g.now, State: terminal[g.r.IntN(len(terminal))], Restarts: 1 << 20,
			SavepointFailures: 99, StateSince: g.now.Add(-48 * time.Hour)})
		obs := withCheckpoint(observe(lastSample(&h).State), time.Minute)
		d := EvaluateHealth(p, h, obs, g.now)
		if d.State == Unhealthy || d.Action != ActionNone || d.Problem != ReasonJobEnded {
			t.Fatalf("run %d: terminal %s job: %s/%s/%s: %s", i, lastSample(&h).State, d.State, d.Problem, d.Action, d.Message())
		}
	}
}

// TestPropertyHealthWarmUp: before the shortest window of the rules has
// passed since the job started, nothing is unhealthy; the restart and
// savepoint rules wait for Window and the checkpoint rule for the
// checkpoint window, whatever the samples say.
func TestPropertyHealthWarmUp(t *testing.T) {
	g := newGen(15)
	bad := []flinkapi.JobState{flinkapi.JobRunning, flinkapi.JobRestarting, flinkapi.JobInitializing, flinkapi.JobCreated, flinkapi.JobCancelling}
	for i := range propertyRuns {
		p := g.healthPolicy()
		if p.Validate() != nil {
			continue
		}
		pd := p.WithDefaults()
		h := HealthHistory{JobID: jobID, CheckpointInterval: Duration(g.dur(time.Minute)), CheckpointTimeout: Duration(g.dur(time.Minute))}
		cw := checkpointWindow(&pd, &h)
		warm := min(pd.Window.Std(), pd.TransitionTimeout.Std())
		if cw > 0 {
			warm = min(warm, cw)
		}
		ran := g.dur(warm)
		if ran == warm {
			ran--
		}
		h.Started = g.now.Add(-ran)
		// Terrible samples from before and after the start.
		for k := range 6 {
			at := g.now.Add(-ran + time.Duration(k)*ran/5 - time.Hour*time.Duration(g.r.IntN(2)))
			h.Samples = append(h.Samples, HealthSample{Time: at, State: bad[g.r.IntN(len(bad))], Restarts: int64(k * 100),
				SavepointFailures: 50, StateSince: at.Add(-24 * time.Hour)})
		}
		lastSample(&h).Time = g.now
		obs := withCheckpoint(observe(lastSample(&h).State), time.Minute)
		d := EvaluateHealth(p, h, obs, g.now)
		if d.State == Unhealthy {
			t.Fatalf("run %d: a job that ran %v (warm-up %v) is unhealthy: %s", i, ran, warm, d.Message())
		}

		// Per rule: restarts and savepoints wait for Window, checkpoints
		// for their window, even when a stuck state is not involved.
		ran2 := g.dur(pd.Window.Std() - 1)
		h2 := HealthHistory{JobID: jobID, Started: g.now.Add(-ran2), CheckpointInterval: Duration(time.Second)}
		h2.Samples = []HealthSample{
			{Time: g.now.Add(-time.Hour), State: flinkapi.JobRunning},
			{Time: g.now, State: flinkapi.JobRunning, Restarts: 1000, SavepointFailures: 1000, StateSince: h2.Started},
		}
		if d := EvaluateHealth(p, h2, observe(flinkapi.JobRunning), g.now); d.Problem == ReasonTooManyRestarts || d.Problem == ReasonSavepointsFailing {
			t.Fatalf("run %d: judged %s %v after the start, window %v", i, d.Problem, ran2, pd.Window)
		}
		if cw2 := checkpointWindow(&pd, &h2); cw2 > 0 && ran2 < cw2 {
			if d := EvaluateHealth(p, h2, observe(flinkapi.JobRunning), g.now); d.Problem == ReasonNoCheckpointProgress {
				t.Fatalf("run %d: judged %s %v after the start, checkpoint window %v", i, d.Problem, ran2, cw2)
			}
		}
	}
}

// TestHealthHistoryAdd checks that Add keeps the history bounded, ordered,
// spanning the window with one sample before it, and per job.
func TestHealthHistoryAdd(t *testing.T) {
	p := HealthPolicy{Window: Duration(10 * time.Minute)}
	var h HealthHistory
	start := ago(2 * time.Hour)
	for i := range 2 * 60 * 6 { // every 10s for 2h
		at := start.Add(time.Duration(i) * 10 * time.Second)
		h.Add(jobID, start, HealthSample{Time: at, State: flinkapi.JobRunning, Restarts: int64(i / 6)}, p)
		if len(h.Samples) > MaxHealthSamples {
			t.Fatalf("after %d samples the history holds %d", i+1, len(h.Samples))
		}
		for k := 1; k < len(h.Samples); k++ {
			if !h.Samples[k].Time.After(h.Samples[k-1].Time) {
				t.Fatalf("samples out of order at %d", k)
			}
		}
		if i > 60 {
			cut := at.Add(-10 * time.Minute)
			if h.Samples[0].Time.After(cut) {
				t.Fatalf("after %d samples the oldest %v is after the cut %v", i+1, h.Samples[0].Time, cut)
			}
			if len(h.Samples) > 1 && !h.Samples[1].Time.After(cut) {
				t.Fatalf("two samples at or before the cut: %v, %v", h.Samples[0].Time, h.Samples[1].Time)
			}
		}
	}
	if h.Started != start {
		t.Errorf("Started %v, want %v", h.Started, start)
	}
	last := lastSample(&h)
	h.Add(jobID, start, HealthSample{Time: last.Time, State: flinkapi.JobFailed}, p)
	if lastSample(&h).State != flinkapi.JobRunning {
		t.Error("a sample not newer than the newest was added")
	}
	// One restart per minute over 2h: within the window of 10m, 10.
	d := EvaluateHealth(p, h, observe(flinkapi.JobRunning), last.Time)
	if d.Problem != ReasonTooManyRestarts || d.Details.Count < 10 || d.Details.Count > 11 {
		t.Errorf("decision %s, count %d: %s", d.Problem, d.Details.Count, d.Message())
	}
	other := flinkapi.JobID("ffffffffffffffffffffffffffffffff")
	h.Add(other, time.Time{}, HealthSample{Time: now, State: flinkapi.JobCreated}, p)
	if h.JobID != other || len(h.Samples) != 1 || h.Started != now {
		t.Errorf("another job's sample: %+v", h)
	}
}

func TestHealthJSON(t *testing.T) {
	p := HealthPolicy{Action: HealthRestartFromLatestState, Window: Duration(5 * time.Minute), CheckpointWindow: Duration(time.Minute)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"action":"RestartFromLatestState","window":"5m0s","checkpointWindow":"1m0s"}`; string(b) != want {
		t.Errorf("policy JSON %s, want %s", b, want)
	}
	if b, _ := json.Marshal(HealthPolicy{}); string(b) != "{}" {
		t.Errorf("zero policy JSON %s", b)
	}
	h := sampled(flinkapi.JobRunning, time.Hour, 10*time.Minute, 1)
	b, err = json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back HealthHistory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if d1, d2 := EvaluateHealth(p, h, observe(flinkapi.JobRunning), now), EvaluateHealth(p, back, observe(flinkapi.JobRunning), now); d1 != d2 {
		t.Errorf("decisions differ after a round trip: %+v, %+v", d1, d2)
	}
	if err := (HealthPolicy{Action: "Sometimes", MaxRestarts: -1, MaxSavepointFailures: -2, CheckpointWindow: -1}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "action") || !strings.Contains(err.Error(), "maxRestarts") ||
		!strings.Contains(err.Error(), "maxSavepointFailures") || !strings.Contains(err.Error(), "checkpointWindow") {
		t.Errorf("Validate: %v", err)
	}
}

func TestHealthDeepCopy(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[HealthPolicy](), reflect.TypeFor[HealthSample](), reflect.TypeFor[HealthDecision](),
		reflect.TypeFor[RescalePolicy](), reflect.TypeFor[RescaleDecision]()} {
		for _, p := range plaincheck.Problems(typ.Name(), typ) {
			t.Error(p)
		}
	}
	for _, p := range plaincheck.Problems("HealthHistory", reflect.TypeFor[HealthHistory](), "HealthHistory.Samples") {
		t.Error(p)
	}
	h := sampled(flinkapi.JobRunning, time.Hour, 10*time.Minute, 1)
	c := h.DeepCopy()
	if diff := cmp.Diff(h, *c); diff != "" {
		t.Errorf("copy differs:\n%s", diff)
	}
	c.Samples[0].Restarts = 99
	if h.Samples[0].Restarts == 99 {
		t.Error("DeepCopy shares the samples")
	}
	d := EvaluateHealth(HealthPolicy{Action: HealthRestartFromLatestState}, h, withCheckpoint(observe(flinkapi.JobRunning), time.Minute), now)
	for _, pair := range [][2]any{
		{&d, d.DeepCopy()}, {&h.Samples[0], h.Samples[0].DeepCopy()},
		{&HealthPolicy{MaxRestarts: 2}, (&HealthPolicy{MaxRestarts: 2}).DeepCopy()},
		{&RescalePolicy{InPlaceOnly: true}, (&RescalePolicy{InPlaceOnly: true}).DeepCopy()},
	} {
		if diff := cmp.Diff(pair[0], pair[1]); diff != "" {
			t.Errorf("DeepCopy of %T differs:\n%s", pair[0], diff)
		}
	}
	if (*HealthHistory)(nil).DeepCopy() != nil || (*HealthDecision)(nil).DeepCopy() != nil || (*HealthSample)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}

const goldenHealth = "testdata/health_decisions.golden"

// healthAxis is one kind of history of the golden table.
type healthAxis struct {
	name string
	h    func(flinkapi.JobState) HealthHistory
}

var goldenHealthHistories = []healthAxis{
	{"calm", func(s flinkapi.JobState) HealthHistory {
		return withState(sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0), s, time.Minute)
	}},
	{"just-started", func(s flinkapi.JobState) HealthHistory {
		return withState(sampled(flinkapi.JobRunning, 2*time.Minute, 20*time.Second, 2), s, time.Minute)
	}},
	{"restart-loop", func(s flinkapi.JobState) HealthHistory {
		return withState(sampled(flinkapi.JobRunning, time.Hour, time.Minute, 1), s, time.Minute)
	}},
	{"no-checkpoints", func(s flinkapi.JobState) HealthHistory {
		h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
		for i := range h.Samples {
			h.Samples[i].LatestCheckpoint = ago(40 * time.Minute)
		}
		return withState(h, s, time.Minute)
	}},
	{"savepoints-failing", func(s flinkapi.JobState) HealthHistory {
		h := sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0)
		lastSample(&h).SavepointFailures = 4
		return withState(h, s, time.Minute)
	}},
	{"in-state-10m", func(s flinkapi.JobState) HealthHistory {
		return withState(sampled(flinkapi.JobRunning, time.Hour, time.Minute, 0), s, 10*time.Minute)
	}},
}

// withState puts the newest sample in state s, entered since ago.
func withState(h HealthHistory, s flinkapi.JobState, since time.Duration) HealthHistory {
	if s != flinkapi.JobRunning {
		l := lastSample(&h)
		l.State, l.StateSince = s, ago(since)
	}
	return h
}

// goldenHealthTable evaluates every combination of health action, job
// state, history and restore-point age, formatted as an aligned table.
func goldenHealthTable() []byte {
	var buf bytes.Buffer
	buf.WriteString(`# EvaluateHealth decisions: health action x job state x history x restore-point age.
# Generated by TestGoldenHealthDecisions; regenerate with: go test ./policy -run Golden -update
# Policy: defaults (maxRestarts 3 within a window of 10m, maxSavepointFailures 3, transitionTimeout 5m,
# maxStateAge 24h) with the action of the row. Job: checkpoint interval 1m, timeout 1m (checkpoint window 3m).
# Histories (sampled every minute for an hour unless said): calm = no restarts, a checkpoint 30s before each
# sample; just-started = started 2m ago, 2 restarts per sample; restart-loop = one restart per minute;
# no-checkpoints = the newest checkpoint 40m old; savepoints-failing = 4 in a row; the newest sample is
# in the row's state since 1m (in-state-10m: since 10m). Ages: young = savepoint 2h, checkpoint 5m;
# too-old = savepoint 30h, checkpoint 25h. Deadline and requeue are relative to now.

`)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tJOB\tHISTORY\tSTATE\tVERDICT\tPROBLEM\tDO\tRESTORE\tREASON\tDEADLINE\tREQUEUE\tMESSAGE")
	for _, action := range []HealthAction{HealthReport, HealthRestartFromLatestState} {
		for _, js := range allJobStates {
			for _, hx := range goldenHealthHistories {
				for _, a := range goldenAges {
					d := EvaluateHealth(HealthPolicy{Action: action}, hx.h(js), a.add(observe(js)), now)
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
						action, js, hx.name, a.name, d.State, d.Problem, d.Action, restoreCell(d.RestorePoint),
						d.Reason, relCell(d.Deadline), durCell(d.RequeueAfter), d.Message())
				}
			}
		}
	}
	tw.Flush()
	lines := strings.Split(buf.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestGoldenHealthDecisions compares the health decision table with
// testdata/health_decisions.golden; -update rewrites the file.
func TestGoldenHealthDecisions(t *testing.T) {
	got := goldenHealthTable()
	if *update {
		if err := os.WriteFile(goldenHealth, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", goldenHealth)
		return
	}
	want, err := os.ReadFile(goldenHealth)
	if err != nil {
		t.Fatalf("%v (run: go test ./policy -run Golden -update)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("decisions differ from %s (-want +got); if the change is intended, run go test ./policy -run Golden -update:\n%s", goldenHealth, diff)
	}
}

// TestGoldenHealthInvariants checks every row of the golden table against
// the invariants, so the file cannot be blessed with a violation in it.
func TestGoldenHealthInvariants(t *testing.T) {
	for _, action := range []HealthAction{HealthReport, HealthRestartFromLatestState} {
		for _, js := range allJobStates {
			for _, hx := range goldenHealthHistories {
				for _, a := range goldenAges {
					p := HealthPolicy{Action: action}
					h, obs := hx.h(js), a.add(observe(js))
					d := EvaluateHealth(p, h, obs, now)
					for _, msg := range healthViolations(p, h, obs, now, d) {
						t.Errorf("%s/%s/%s/%s: %s", action, js, hx.name, a.name, msg)
					}
				}
			}
		}
	}
}

// FuzzHealthHistoryJSON reads a health history from arbitrary JSON, as a
// custom resource's status would hold it, evaluates it, and checks the
// invariants; Add on what was read keeps the bounds.
func FuzzHealthHistoryJSON(f *testing.F) {
	for _, h := range []HealthHistory{sampled(flinkapi.JobRunning, time.Hour, 7*time.Minute, 1), sampled(flinkapi.JobRestarting, 20*time.Minute, time.Minute, 0), {}} {
		b, _ := json.Marshal(h)
		f.Add(b, uint8(0))
	}
	f.Add([]byte(`{"samples":[{"time":"2025-06-01T11:00:00Z","state":"RUNNING","restarts":-5},{"time":"2025-06-01T10:00:00Z","state":"CANCELLING"}]}`), uint8(1))
	f.Add([]byte(`{"checkpointInterval":"1ns","samples":[{"time":"0001-01-01T00:00:00Z","state":""}]}`), uint8(2))
	f.Add([]byte(`{"formatVersion":2,"samples":[{"time":"2025-06-01T11:00:00Z","state":"RUNNING"}]}`), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		var h HealthHistory
		if json.Unmarshal(data, &h) != nil {
			return
		}
		r := rand.New(rand.NewPCG(uint64(pick), 1))
		g := &gen{r: r, now: now}
		p := g.healthPolicy()
		obs := g.observations()
		d := EvaluateHealth(p, h, obs, now)
		if v := healthViolations(p, h, obs, now, d); len(v) > 0 {
			t.Fatalf("%v\nhistory %+v\ndecision %+v", v, h, d)
		}
		h.Add(jobID, time.Time{}, HealthSample{Time: now.Add(time.Hour), State: flinkapi.JobRunning}, p)
		if len(h.Samples) > MaxHealthSamples+1 {
			t.Fatalf("Add left %d samples", len(h.Samples))
		}
	})
}

var healthSink HealthDecision

// BenchmarkEvaluateHealth measures one health evaluation over a full
// history (MaxHealthSamples samples) for a healthy job, a restart loop
// reported, and a restart loop restarted from a checkpoint.
func BenchmarkEvaluateHealth(b *testing.B) {
	full := func(restarts int64) HealthHistory {
		h := sampled(flinkapi.JobRunning, time.Hour, time.Hour/MaxHealthSamples, restarts)
		h.Samples = h.Samples[len(h.Samples)-MaxHealthSamples:]
		return h
	}
	cases := []struct {
		name string
		p    HealthPolicy
		h    HealthHistory
		obs  Observations
	}{
		{"Healthy", HealthPolicy{}, full(0), observe(flinkapi.JobRunning)},
		{"RestartLoopReport", HealthPolicy{}, full(5), observe(flinkapi.JobRunning)},
		{"RestartLoopRestart", HealthPolicy{Action: HealthRestartFromLatestState}, full(5), withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), time.Minute)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				healthSink = EvaluateHealth(c.p, c.h, c.obs, now)
			}
		})
	}
}

// BenchmarkHealthHistoryAdd measures recording one sample into a full
// history, thinning included.
func BenchmarkHealthHistoryAdd(b *testing.B) {
	var h HealthHistory
	p := HealthPolicy{Window: Duration(time.Hour)}
	at := now
	for range MaxHealthSamples {
		at = at.Add(10 * time.Second)
		h.Add(jobID, now, HealthSample{Time: at, State: flinkapi.JobRunning}, p)
	}
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(10 * time.Second)
		h.Add(jobID, now, HealthSample{Time: at, State: flinkapi.JobRunning}, p)
	}
}

// ExampleEvaluateHealth judges a job that Flink restarted once a minute
// for the last 20 minutes, and restarts it from its newest retained
// checkpoint.
func ExampleEvaluateHealth() {
	start := time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	p := HealthPolicy{Action: HealthRestartFromLatestState, Window: Duration(10 * time.Minute)}
	var h HealthHistory
	for i := range 61 {
		at := start.Add(time.Duration(i) * time.Minute)
		h.Add("0123456789abcdef0123456789abcdef", start, HealthSample{
			Time: at, State: flinkapi.JobRunning, Restarts: int64(max(0, i-40)), LatestCheckpoint: at.Add(-20 * time.Second),
		}, p)
	}
	now := start.Add(time.Hour)
	obs := Observations{
		JobManagerReachable: true,
		Job:                 &Job{ID: "0123456789abcdef0123456789abcdef", State: flinkapi.JobRunning},
		LatestCheckpoint:    Checkpoint{Path: "s3://ckpt/chk-41", Time: now.Add(-time.Minute)},
	}
	d := EvaluateHealth(p, h, obs, now)
	fmt.Println(d.State, d.Problem, d.Action, d.RestorePoint.Path)
	fmt.Println(d.Message())
	// Output:
	// Unhealthy TooManyRestarts CancelFirst s3://ckpt/chk-41
	// unhealthy: Flink restarted the job 10 times within 10m (limit 3); cancel it, then restore from checkpoint s3://ckpt/chk-41 (1m old, limit 24h)
}

// ExampleDecideRescale picks the path for a parallelism change.
func ExampleDecideRescale() {
	obs := RescaleObservations{
		FlinkVersion: flinkapi.Version{Major: 1, Minor: 20, Patch: 5},
		Scheduler:    SchedulerDefault,
		JobState:     flinkapi.JobRunning,
		Vertices:     []VertexParallelism{{ID: "b93d204074064b03a853367828fb3dfe", Parallelism: 1, MaxParallelism: 128}},
	}
	d := DecideRescale(RescalePolicy{}, obs, 4)
	fmt.Println(d.Path, d.Reason)
	obs.Scheduler = SchedulerAdaptive
	fmt.Println(DecideRescale(RescalePolicy{}, obs, 4).Message())
	// Output:
	// Upgrade RescaleByUpgrade
	// Flink 1.20.5 runs the job with the adaptive scheduler: set its resource requirements to parallelism 4 from 1 without a restart
}
