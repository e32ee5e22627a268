package controller

import (
	"context"
	"math"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/policy"
)

// series is a series of a gauge (value) or a histogram (count, sum).
type series struct {
	labels map[string]string
	value  float64
	count  uint64
	sum    float64
}

// gathered returns the series of the metric family name on
// controller-runtime's registry whose labels include want.
func gathered(t *testing.T, name string, want map[string]string) []series {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []series
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			s := series{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if s.labels[k] != v {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				s.count, s.sum = h.GetSampleCount(), h.GetSampleSum()
			} else {
				s.value = m.GetGauge().GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// stateHistogram returns the sample count and sum of the time-in-state
// histogram of state.
func stateHistogram(t *testing.T, state policy.DeploymentState) (uint64, float64) {
	t.Helper()
	s := gathered(t, "flinkkit_state_duration_seconds", map[string]string{"state": string(state)})
	if len(s) == 0 {
		return 0, 0
	}
	return s[0].count, s[0].sum
}

// TestTimeInStateMetrics: a FlinkJob's entered-state timestamp follows
// its state (one series, the current state's, set to the fake clock's
// time of the reconcile that saw the change); the time it spent Updating
// during an upgrade is observed once, as measured on that clock; when the
// FlinkJob goes its series goes, and the time it spent Running is
// observed.
func TestTimeInStateMetrics(t *testing.T) {
	h := newHarness(t)
	h.key.Name = "timed"
	labels := map[string]string{"namespace": h.key.Namespace, "name": h.key.Name}
	h.create(h.spec())
	var enteredRunning time.Time
	h.until("create", runs, func(j *v1alpha1.FlinkJob) {
		if j.Status.State == policy.Running && enteredRunning.IsZero() {
			enteredRunning = h.srv.Clock().Now()
		}
	})
	s := gathered(t, "flinkkit_flinkjob_state_entered_timestamp_seconds", labels)
	if len(s) != 1 || s[0].labels["state"] != string(policy.Running) || s[0].value != float64(enteredRunning.UnixNano())/1e9 {
		t.Fatalf("entered-state series %+v; want one, Running since %v", s, enteredRunning)
	}

	updCount, updSum := stateHistogram(t, policy.Updating)
	runCount, _ := stateHistogram(t, policy.Running)
	h.srv.Clock().Advance(10 * time.Second)
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	var updatingAt, runningAgainAt time.Time
	h.until("upgrade", upgraded, func(j *v1alpha1.FlinkJob) {
		now := h.srv.Clock().Now()
		switch {
		case j.Status.State == policy.Updating && updatingAt.IsZero():
			updatingAt = now
		case j.Status.State == policy.Running && !updatingAt.IsZero() && runningAgainAt.IsZero():
			runningAgainAt = now
		}
	})
	if updatingAt.IsZero() || runningAgainAt.IsZero() {
		t.Fatalf("the upgrade was never seen Updating (%v) then Running (%v)", updatingAt, runningAgainAt)
	}
	c, sum := stateHistogram(t, policy.Updating)
	if took := runningAgainAt.Sub(updatingAt).Seconds(); c != updCount+1 || math.Abs(sum-updSum-took) > 1e-6 || took <= 0 {
		t.Errorf("Updating observed %d times, %vs; want once, %vs", c-updCount, sum-updSum, runningAgainAt.Sub(updatingAt).Seconds())
	}
	if c, _ := stateHistogram(t, policy.Running); c != runCount+1 {
		t.Errorf("Running observed %d times on the upgrade, want once (left for Updating)", c-runCount)
	}
	s = gathered(t, "flinkkit_flinkjob_state_entered_timestamp_seconds", labels)
	if len(s) != 1 || s[0].labels["state"] != string(policy.Running) || s[0].value != float64(runningAgainAt.UnixNano())/1e9 {
		t.Errorf("entered-state series after the upgrade %+v; want one, Running since %v", s, runningAgainAt)
	}

	h.srv.Clock().Advance(10 * time.Second)
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, nil)
	// A reconcile of the FlinkJob gone changes nothing more.
	if _, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	if s := gathered(t, "flinkkit_flinkjob_state_entered_timestamp_seconds", labels); len(s) != 0 {
		t.Errorf("entered-state series left after the FlinkJob went: %+v", s)
	}
	if c, _ := stateHistogram(t, policy.Running); c < runCount+2 {
		t.Errorf("Running observed %d times after the delete, want 2 or more", c-runCount)
	}
}
