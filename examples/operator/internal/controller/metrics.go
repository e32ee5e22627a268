package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The operator's metrics, on controller-runtime's Prometheus registry
// (metrics.Registry), which the manager serves at its metrics endpoint
// beside controller-runtime's own (reconcile counts and durations, work
// queue depth).
var (
	// operationsStarted counts the lifecycle operations started
	// (Upgrade, Restart, Teardown, TakeSavepoint, DisposeSavepoints,
	// Rescale, BlueGreen), by operation.
	operationsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flinkkit_operations_started_total",
		Help: "Lifecycle operations started, by operation.",
	}, []string{"operation"})
	// operationsEnded counts the lifecycle operations that ended, by
	// operation and outcome (Succeeded, NotNeeded, TimedOut, ...).
	operationsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flinkkit_operations_ended_total",
		Help: "Lifecycle operations ended, by operation and outcome.",
	}, []string{"operation", "outcome"})
	// savepointSeconds observes, for each savepoint that succeeded, the
	// time from its trigger until the reconcile that saw it complete, by
	// the operation that took it.
	savepointSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flinkkit_savepoint_duration_seconds",
		Help:    "Time from a savepoint's trigger until it was seen completed, by operation.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"operation"})
	// jobsByState is the number of FlinkJobs in each deployment state
	// (status.state), as this process last reconciled them.
	jobsByState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flinkkit_jobs",
		Help: "FlinkJobs by deployment state (status.state) as last reconciled.",
	}, []string{"state"})
	// restarts counts the restarts of failed or lost jobs the operator
	// started (Restart operations).
	restarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flinkkit_job_restarts_total",
		Help: "Restarts of failed or lost jobs started by the operator.",
	})
	// stateEntered is, for each FlinkJob, the Unix time it entered its
	// deployment state, as this process saw it (time in the state:
	// time() minus it); one series per FlinkJob, removed when it goes.
	stateEntered = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flinkkit_flinkjob_state_entered_timestamp_seconds",
		Help: "Unix time each FlinkJob entered its deployment state (status.state), as this process saw it.",
	}, []string{"namespace", "name", "state"})
	// stateSeconds observes the time FlinkJobs spent in a deployment
	// state, when they leave it (or go).
	stateSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flinkkit_state_duration_seconds",
		Help:    "Time FlinkJobs spent in a deployment state (status.state), observed when they leave it.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
	}, []string{"state"})
)

func init() {
	metrics.Registry.MustRegister(operationsStarted, operationsEnded, savepointSeconds, jobsByState, restarts, stateEntered, stateSeconds)
}

// jobStates keeps the deployment state each FlinkJob was last reconciled
// in, and since when, so that jobsByState counts every FlinkJob once and
// the time in each state is measured.
var jobStates = &stateTracker{states: map[types.NamespacedName]stateEntry{}}

type stateTracker struct {
	mu     sync.Mutex
	states map[types.NamespacedName]stateEntry
}

// stateEntry is a FlinkJob's state and when this process saw it enter
// it (first saw it, after a restart).
type stateEntry struct {
	state string
	since time.Time
}

// set records key's state at time at ("" once the FlinkJob is gone): on
// a change, the time spent in the old state is observed and the
// FlinkJob's entered-timestamp series moves to the new state.
func (s *stateTracker) set(key types.NamespacedName, state policy.DeploymentState, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.states[key]
	now := string(state)
	if state == "" && !had {
		return
	}
	if had && old.state == now {
		return
	}
	if had {
		jobsByState.WithLabelValues(old.state).Dec()
		stateSeconds.WithLabelValues(old.state).Observe(max(at.Sub(old.since), 0).Seconds())
		stateEntered.DeleteLabelValues(key.Namespace, key.Name, old.state)
	}
	if state == "" {
		delete(s.states, key)
		return
	}
	s.states[key] = stateEntry{state: now, since: at}
	jobsByState.WithLabelValues(now).Inc()
	stateEntered.WithLabelValues(key.Namespace, key.Name, now).Set(float64(at.UnixNano()) / 1e9)
}

// countTransition counts the start and end of an operation.
func countTransition(t lifecycle.Transition) {
	if t.From == "" {
		operationsStarted.WithLabelValues(t.Operation).Inc()
		if t.Operation == "Restart" {
			restarts.Inc()
		}
	}
	if t.To == lifecycle.PhaseDone {
		operationsEnded.WithLabelValues(t.Operation, string(t.Outcome)).Inc()
	}
}

// observeSavepoint observes the duration of the savepoint in after, the
// progress a reconcile stored, if it succeeded in that reconcile (before
// is the progress the reconcile started from).
func observeSavepoint(before, after *lifecycle.Progress, now time.Time) {
	sp := &after.Savepoint.Status
	if sp.State != savepoint.Succeeded || sp.TriggerTime.IsZero() {
		return
	}
	if b := &before.Savepoint.Status; b.State == savepoint.Succeeded && b.TriggerID == sp.TriggerID && before.Operation == after.Operation {
		return
	}
	savepointSeconds.WithLabelValues(after.Operation).Observe(now.Sub(sp.TriggerTime).Seconds())
}
