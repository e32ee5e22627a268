package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

// gen draws random policies and observations around a clock.
type gen struct {
	r   *rand.Rand
	now time.Time
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: now}
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) dur(max time.Duration) time.Duration { return time.Duration(g.r.Int64N(int64(max) + 1)) }

// pick returns one of the durations, or a random one up to 48h.
func (g *gen) pickDur(ds ...time.Duration) Duration {
	if g.chance(0.3) {
		return Duration(g.dur(48 * time.Hour))
	}
	return Duration(ds[g.r.IntN(len(ds))])
}

// timeNear returns a time around now: mostly in the past, sometimes just
// ahead (clock skew), sometimes zero, sometimes exactly at a limit.
func (g *gen) timeNear(limits ...time.Duration) time.Time {
	switch x := g.r.IntN(20); {
	case x == 0:
		return time.Time{}
	case x == 1:
		return g.now.Add(g.dur(2 * time.Minute))
	case x <= 4 && len(limits) > 0:
		l := limits[g.r.IntN(len(limits))]
		return g.now.Add(-l + time.Duration(g.r.IntN(3)-1))
	case x <= 12:
		return g.now.Add(-g.dur(30 * time.Minute))
	}
	return g.now.Add(-g.dur(48 * time.Hour))
}

func (g *gen) updatePolicy() UpdatePolicy {
	modes := []UpgradeMode{"", UpgradeStateless, UpgradeSavepoint, UpgradeLastState, UpgradeSavepoint, UpgradeLastState}
	p := UpdatePolicy{
		Mode:                   modes[g.r.IntN(len(modes))],
		MaxStateAge:            g.pickDur(0, time.Minute, time.Hour, 24*time.Hour),
		AllowNonRestoredState:  g.chance(0.5),
		FallbackToLastState:    g.chance(0.4),
		SavepointDeadline:      g.pickDur(0, time.Minute, 10*time.Minute),
		SavepointAttempts:      g.r.IntN(4),
		TransitionTimeout:      g.pickDur(0, time.Minute, 5*time.Minute),
		AllowStartWithoutState: g.chance(0.3),
	}
	if g.chance(0.02) {
		p.Mode = "Bogus"
	}
	if g.chance(0.02) {
		p.MaxStateAge = -1
	}
	return p
}

func (g *gen) restartPolicy() RestartPolicy {
	p := RestartPolicy{
		MaxRestarts:       g.r.IntN(5),
		Window:            g.pickDur(0, 10*time.Minute, time.Hour),
		Backoff:           g.pickDur(0, 10*time.Second, time.Minute),
		MaxStateAge:       g.pickDur(0, time.Minute, time.Hour, 24*time.Hour),
		TransitionTimeout: g.pickDur(0, time.Minute, 5*time.Minute),
	}
	switch g.r.IntN(5) {
	case 0:
		p.Mode = RestartNever
	case 1:
		p.Mode = ""
	default:
		p.Mode = RestartFromLatestState
	}
	if g.chance(0.02) {
		p.Backoff = -1
	}
	return p
}

var savepointStates = []savepoint.State{
	"", savepoint.Pending, savepoint.InFlight, savepoint.Succeeded, savepoint.Failed, savepoint.Lost,
	savepoint.LostForGood, savepoint.JobGone, savepoint.JobTerminal, savepoint.TimedOut,
}

func (g *gen) observations(limits ...time.Duration) Observations {
	o := Observations{
		JobManagerReachable: g.chance(0.85),
		LastContact:         g.timeNear(5 * time.Minute),
		SpecChanged:         g.chance(0.85),
		FirstDeploy:         g.chance(0.1),
		SavepointAttempts:   g.r.IntN(4),
		Restarts:            g.r.IntN(6),
		LastRestart:         g.timeNear(time.Hour, 30*time.Second),
	}
	if g.chance(0.8) {
		states := append(allJobStates, "SOMETHING_NEW")
		o.Job = &Job{
			ID:         jobID,
			State:      states[g.r.IntN(len(states))],
			StartTime:  g.timeNear(),
			StateSince: g.timeNear(5 * time.Minute),
		}
		if g.chance(0.5) {
			o.Job.EndTime = g.timeNear(30 * time.Second)
		}
	}
	if g.chance(0.6) {
		st := savepoint.Status{
			State:       savepointStates[g.r.IntN(len(savepointStates))],
			TriggerTime: g.timeNear(10 * time.Minute),
			LastUpdate:  g.timeNear(),
			Failure:     "java.lang.Exception: boom",
		}
		if g.chance(0.6) {
			st.Deadline = g.now.Add(time.Duration(g.r.Int64N(int64(20*time.Minute))) - 10*time.Minute)
		}
		if g.chance(0.3) {
			st.Location = "s3://sp/op"
		}
		o.Savepoint = st
	}
	if g.chance(0.6) {
		o.LatestSavepoint = savepoint.Record{Location: "s3://sp/latest", Time: g.timeNear(limits...)}
		if g.chance(0.05) {
			o.LatestSavepoint.Location = ""
		}
	}
	if g.chance(0.6) {
		o.LatestCheckpoint = Checkpoint{Path: "s3://cp/latest", Time: g.timeNear(limits...)}
		if g.chance(0.05) {
			o.LatestCheckpoint.Path = ""
		}
	}
	return o
}

// unanchored reports whether obs has a wait whose start is unknown, so its
// deadline is counted from now and moves with it (documented).
func unanchored(obs Observations) bool {
	if !obs.JobManagerReachable && obs.LastContact.IsZero() {
		return true
	}
	if obs.Job != nil && obs.Job.StateSince.IsZero() && obs.Job.StartTime.IsZero() {
		return true
	}
	st := obs.Savepoint
	return savepointInFlight(&st) && st.Deadline.IsZero() && st.TriggerTime.IsZero() && st.LastUpdate.IsZero()
}

const propertyRuns = 10000

// TestPropertyUpdate evaluates random observations with random policies and
// checks the invariants on every decision: no state the policy keeps is
// dropped, no restore point is too old or has an empty path, every Wait has
// a deadline after now, and the inputs are left alone.
func TestPropertyUpdate(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		g := newGen(seed)
		for i := range propertyRuns {
			p := g.updatePolicy()
			obs := g.observations(p.WithDefaults().MaxStateAge.Std())
			before, job := obs, obs.Job.DeepCopy()
			d := EvaluateUpdate(p, obs, g.now)
			if v := violations(true, p, RestartPolicy{}, obs, g.now, d); len(v) > 0 {
				t.Fatalf("seed %d run %d: %v\npolicy %+v\nobs %s\ndecision %+v\nmessage %s", seed, i, v, p, dump(obs), d, d.Message())
			}
			if before != obs || (job != nil && *job != *obs.Job) {
				t.Fatalf("seed %d run %d: EvaluateUpdate changed its input", seed, i)
			}
			if again := EvaluateUpdate(p, obs, g.now); again != d {
				t.Fatalf("seed %d run %d: not deterministic", seed, i)
			}
		}
	}
}

func TestPropertyRestart(t *testing.T) {
	for _, seed := range []uint64{4, 5, 6} {
		g := newGen(seed)
		for i := range propertyRuns {
			p := g.restartPolicy()
			obs := g.observations(p.WithDefaults().MaxStateAge.Std())
			d := EvaluateRestart(p, obs, g.now)
			if v := violations(false, UpdatePolicy{}, p, obs, g.now, d); len(v) > 0 {
				t.Fatalf("seed %d run %d: %v\npolicy %+v\nobs %s\ndecision %+v\nmessage %s", seed, i, v, p, dump(obs), d, d.Message())
			}
		}
	}
}

// TestPropertyNothingWaitsForever follows each Wait to its deadline with
// the observations unchanged: after a few steps the decision must be
// something other than Wait.
func TestPropertyNothingWaitsForever(t *testing.T) {
	g := newGen(7)
	for i := range propertyRuns {
		up, rp := g.updatePolicy(), g.restartPolicy()
		obs := g.observations(up.WithDefaults().MaxStateAge.Std(), rp.WithDefaults().MaxStateAge.Std())
		if unanchored(obs) {
			continue
		}
		for _, update := range []bool{true, false} {
			at := g.now
			for step := 0; ; step++ {
				var d Decision
				if update {
					d = EvaluateUpdate(up, obs, at)
				} else {
					d = EvaluateRestart(rp, obs, at)
				}
				if d.Action != ActionWait {
					break
				}
				if step == 4 {
					t.Fatalf("run %d (update %v): still waiting after %d deadlines: %s\nobs %s", i, update, step, d.Message(), dump(obs))
				}
				at = d.Deadline
			}
		}
	}
}

// TestPropertyAgeBoundary checks restore points at exactly the limit and a
// nanosecond past it, with both kinds and all stateful modes.
func TestPropertyAgeBoundary(t *testing.T) {
	for _, mode := range []UpgradeMode{UpgradeSavepoint, UpgradeLastState} {
		for _, js := range []flinkapi.JobState{"", flinkapi.JobFailed, flinkapi.JobFinished, flinkapi.JobRunning} {
			for _, off := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
				p := UpdatePolicy{Mode: mode, MaxStateAge: Duration(time.Hour), FallbackToLastState: true}
				obs := observe(js)
				obs.LatestSavepoint.Location, obs.LatestSavepoint.Time = "s3://sp/edge", now.Add(-time.Hour-off)
				obs.LatestCheckpoint = Checkpoint{Path: "s3://cp/edge", Time: now.Add(-time.Hour - off)}
				d := EvaluateUpdate(p, obs, now)
				if v := violations(true, p, RestartPolicy{}, obs, now, d); len(v) > 0 {
					t.Errorf("%s/%s/%v: %v", mode, js, off, v)
				}
				if got, want := d.RestorePoint.IsSet(), off <= 0; got != want && js != flinkapi.JobRunning {
					t.Errorf("%s/%s/%v: restore point set = %v, want %v (%s)", mode, js, off, got, want, d.Message())
				}
			}
		}
	}
}

func dump(o Observations) string {
	s := cmp.Diff(Observations{}, o)
	return s
}
