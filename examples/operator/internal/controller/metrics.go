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
)

func init() {
	metrics.Registry.MustRegister(operationsStarted, operationsEnded, savepointSeconds, jobsByState, restarts)
}

// jobStates keeps the deployment state each FlinkJob was last reconciled
// in, so that jobsByState counts every FlinkJob once.
var jobStates = &stateTracker{states: map[types.NamespacedName]string{}}

type stateTracker struct {
	mu     sync.Mutex
	states map[types.NamespacedName]string
}

// set records key's state ("" once the FlinkJob is gone).
func (s *stateTracker) set(key types.NamespacedName, state policy.DeploymentState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.states[key]
	now := string(state)
	if state == "" && !had {
		return
	}
	if had && old == now {
		return
	}
	if had {
		jobsByState.WithLabelValues(old).Dec()
	}
	if state == "" {
		delete(s.states, key)
		return
	}
	s.states[key] = now
	jobsByState.WithLabelValues(now).Inc()
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
	sp := &after.Savepoint
	if sp.State != savepoint.Succeeded || sp.TriggerTime.IsZero() {
		return
	}
	if b := &before.Savepoint; b.State == savepoint.Succeeded && b.TriggerID == sp.TriggerID && before.Operation == after.Operation {
		return
	}
	savepointSeconds.WithLabelValues(after.Operation).Observe(now.Sub(sp.TriggerTime).Seconds())
}
