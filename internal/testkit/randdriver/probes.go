package randdriver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// probe is a forged or unknown stored status handed to the controller.
type probe struct {
	name string
	// forge changes the stored status.
	forge func(st *lifecycle.JobStatus, spec lifecycle.JobSpec, now time.Time)
	// want is the error the call must match; nil: any error.
	want error
	// requeue: the call may succeed, but not with a RequeueAfter beyond
	// MaxRequeue.
	requeue bool
}

var probes = []probe{
	{name: "an unknown action in flight", forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		st.Action = "Frobnicate"
		st.Progress.Phase, st.Progress.Outcome = lifecycle.PhaseSavepoint, ""
	}},
	{name: "an unknown phase", forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		if st.Action == "" {
			st.Action = lifecycle.ActionUpgrade
		}
		st.Progress.Phase, st.Progress.Outcome = "Warp", ""
	}},
	{name: "an unknown outcome", forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		if st.Action == "" {
			st.Action = lifecycle.ActionUpgrade
		}
		st.Progress.Phase, st.Progress.Outcome = lifecycle.PhaseDone, "Exploded"
	}},
	{name: "a status of a newer format", want: lifecycle.ErrUnknownFormat, forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		st.FormatVersion = lifecycle.FormatVersion + 1
	}},
	{name: "a progress of a newer format", want: lifecycle.ErrUnknownFormat, forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		if st.Action == "" {
			st.Action = lifecycle.ActionUpgrade
		}
		st.Progress.Phase, st.Progress.Outcome, st.Progress.FormatVersion = lifecycle.PhaseSavepoint, "", lifecycle.FormatVersion+1
	}},
	{name: "another deployment's status", want: lifecycle.ErrForeignStatus, forge: func(st *lifecycle.JobStatus, _ lifecycle.JobSpec, _ time.Time) {
		st.Name = "apps/other"
	}},
	{name: "a retry time far in the future", requeue: true, forge: func(st *lifecycle.JobStatus, spec lifecycle.JobSpec, now time.Time) {
		st.Action, st.Target = lifecycle.ActionUpgrade, spec.Job
		st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeSubmitFailed, Started: now}
		st.RetryAt = now.Add(100 * 365 * 24 * time.Hour)
	}},
}

// probeForged hands the controller forged copies of the stored status
// and checks that each is refused with a typed error before anything is
// sent and left as it was, or, for far-future times, answered with a
// bounded RequeueAfter.
func (d *driver) probeForged(ctx context.Context) {
	spec := d.spec
	spec.State = lifecycle.DesiredRunning
	for _, p := range probes {
		st := d.status()
		p.forge(&st, spec, d.now())
		forged, _ := json.Marshal(st)
		ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: d.ctrlC, Clock: d.srv.Clock()}, Store: d.store, Name: storeName,
			PollInterval: pollInterval, RetryInterval: retryInterval}
		d.newRequests()
		res, err := ctrl.Reconcile(ctx, spec, &st)
		d.res.Calls++
		sent := reqlog.WithoutReplays(d.newRequests())
		after, _ := json.Marshal(st)
		mut := 0
		for _, q := range sent {
			if mutating(q) {
				mut++
			}
		}
		d.tracef("probe %s: err %v requeue %v; action %s phase %s outcome %s; sent %v", p.name, err, res.RequeueAfter, st.Action, st.Progress.Phase,
			st.Progress.Outcome, routesOf(sent))
		switch {
		case p.requeue:
			if err == nil && res.RequeueAfter > MaxRequeue {
				d.violate(BadStoredStatusActedOn, "%s: RequeueAfter %v", p.name, res.RequeueAfter)
			}
		case err == nil:
			d.violate(BadStoredStatusActedOn, "%s: no error; %d requests that change the cluster, action %s phase %s outcome %s, %s/%s",
				p.name, mut, st.Action, st.Progress.Phase, st.Progress.Outcome, st.State, st.Reason)
		case p.want != nil && !errors.Is(err, p.want):
			d.violate(BadStoredStatusActedOn, "%s: %v, want an error matching %v", p.name, err, p.want)
		case mut > 0:
			d.violate(BadStoredStatusActedOn, "%s: refused (%v) after %d requests that change the cluster", p.name, err, mut)
		case p.want != nil && string(after) != string(forged):
			d.violate(BadStoredStatusActedOn, "%s: refused (%v) after the status was changed", p.name, err)
		}
	}
}
