package policy

import (
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

func vertices(ps ...int) []VertexParallelism {
	out := make([]VertexParallelism, len(ps))
	for i, p := range ps {
		out[i] = VertexParallelism{ID: strings.Repeat(string(rune('a'+i)), 32), Parallelism: p, MaxParallelism: 128}
	}
	return out
}

func TestDecideRescale(t *testing.T) {
	v118, v117, v20 := flinkapi.Version{Major: 1, Minor: 18}, flinkapi.Version{Major: 1, Minor: 17, Patch: 2}, flinkapi.Version{Major: 2, Minor: 3}
	adaptive := func(v flinkapi.Version, s flinkapi.JobState, ps ...int) RescaleObservations {
		return RescaleObservations{FlinkVersion: v, Scheduler: SchedulerAdaptive, JobState: s, Vertices: vertices(ps...)}
	}
	def := func(v flinkapi.Version, s flinkapi.JobState, ps ...int) RescaleObservations {
		return RescaleObservations{FlinkVersion: v, Scheduler: SchedulerDefault, JobState: s, Vertices: vertices(ps...)}
	}
	tests := []struct {
		name   string
		p      RescalePolicy
		obs    RescaleObservations
		target int
		path   RescalePath
		reason Reason
		msg    string
	}{
		{"in place on 1.18 adaptive", RescalePolicy{}, adaptive(v118, flinkapi.JobRunning, 1, 1), 2, RescaleInPlace, ReasonRescaleInPlace,
			"Flink 1.18.0 runs the job with the adaptive scheduler: set its resource requirements to parallelism 2 from 1 without a restart"},
		{"in place on 2.3, scale down", RescalePolicy{InPlaceOnly: true}, adaptive(v20, flinkapi.JobRunning, 4, 2), 1, RescaleInPlace, ReasonRescaleInPlace, "from 2..4"},
		{"unchanged", RescalePolicy{}, adaptive(v20, flinkapi.JobRunning, 2, 2), 2, RescaleNone, ReasonParallelismUnchanged, "already runs at parallelism 2"},
		{"unchanged on the default scheduler", RescalePolicy{}, def(v20, flinkapi.JobRunning, 3), 3, RescaleNone, ReasonParallelismUnchanged, ""},
		{"invalid target", RescalePolicy{}, adaptive(v20, flinkapi.JobRunning, 1), 0, RescaleBlocked, ReasonInvalidParallelism, "at least 1"},
		{"above max parallelism", RescalePolicy{}, adaptive(v20, flinkapi.JobRunning, 1), 129, RescaleBlocked, ReasonAboveMaxParallelism, "maximum parallelism 128"},
		{"default scheduler: upgrade", RescalePolicy{}, def(v20, flinkapi.JobRunning, 1), 2, RescaleByUpgrade, ReasonRescaleByUpgrade,
			"runs under the Default scheduler, not the adaptive one): stop it with a savepoint and restore it with parallelism 2 from 1"},
		{"default scheduler, in place only", RescalePolicy{InPlaceOnly: true}, def(v20, flinkapi.JobRunning, 1), 2, RescaleBlocked, ReasonRescaleRestartForbidden,
			"the policy forbids the restart; the job keeps its parallelism 1"},
		{"1.17 adaptive: upgrade", RescalePolicy{}, adaptive(v117, flinkapi.JobRunning, 1), 2, RescaleByUpgrade, ReasonRescaleByUpgrade, "Flink 1.17.2 is older than 1.18"},
		{"unknown version", RescalePolicy{}, adaptive(flinkapi.Version{}, flinkapi.JobRunning, 1), 2, RescaleByUpgrade, ReasonRescaleByUpgrade, "version is unknown"},
		{"unknown scheduler", RescalePolicy{}, RescaleObservations{FlinkVersion: v20, JobState: flinkapi.JobRunning, Vertices: vertices(1)}, 2, RescaleByUpgrade, ReasonRescaleByUpgrade, "scheduler is unknown"},
		{"adaptive, restarting: wait", RescalePolicy{}, adaptive(v20, flinkapi.JobRestarting, 1), 2, RescaleWait, ReasonRescaleWaitRunning, "RESTARTING"},
		{"adaptive, failed job: upgrade", RescalePolicy{}, adaptive(v20, flinkapi.JobFailed, 1), 2, RescaleByUpgrade, ReasonRescaleByUpgrade, "the job is FAILED"},
		{"adaptive, failed job at target: upgrade", RescalePolicy{}, adaptive(v20, flinkapi.JobFailed, 2), 2, RescaleByUpgrade, ReasonRescaleByUpgrade, ""},
		{"missing job, in place only", RescalePolicy{InPlaceOnly: true}, adaptive(v20, ""), 2, RescaleBlocked, ReasonRescaleRestartForbidden,
			"does not know the job) and the policy forbids the restart; the job keeps its parallelism"},
		{"missing job: upgrade", RescalePolicy{}, adaptive(v20, ""), 2, RescaleByUpgrade, ReasonRescaleByUpgrade, "from an unknown parallelism"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideRescale(tc.p, tc.obs, tc.target)
			if d.Path != tc.path || d.Reason != tc.reason {
				t.Errorf("%s/%s, want %s/%s: %s", d.Path, d.Reason, tc.path, tc.reason, d.Message())
			}
			if !strings.Contains(d.Message(), tc.msg) {
				t.Errorf("message %q does not contain %q", d.Message(), tc.msg)
			}
		})
	}
}

// TestPropertyRescale checks the rules on every combination: in place only
// on 1.18+ with the adaptive scheduler for a RUNNING job; never a restart
// under InPlaceOnly; never beyond the maximum parallelism.
func TestPropertyRescale(t *testing.T) {
	versions := []flinkapi.Version{{}, {Major: 1, Minor: 15}, {Major: 1, Minor: 17, Patch: 9}, {Major: 1, Minor: 18}, {Major: 1, Minor: 20, Patch: 5}, {Major: 2, Minor: 3}}
	schedulers := []Scheduler{"", SchedulerDefault, SchedulerAdaptive, "AdaptiveBatch"}
	states := append([]flinkapi.JobState{""}, allJobStates...)
	for _, v := range versions {
		for _, s := range schedulers {
			for _, js := range states {
				for _, ps := range [][]int{nil, {1}, {2, 2}, {1, 4}, {200}} {
					for _, target := range []int{-1, 0, 1, 2, 4, 128, 129} {
						for _, only := range []bool{false, true} {
							obs := RescaleObservations{FlinkVersion: v, Scheduler: s, JobState: js, Vertices: vertices(ps...)}
							d := DecideRescale(RescalePolicy{InPlaceOnly: only}, obs, target)
							name := []any{v, s, js, ps, target, only, d.Path, d.Reason}
							if d.Path == RescaleInPlace && (!v.AtLeast(1, 18) || s != SchedulerAdaptive || js != flinkapi.JobRunning) {
								t.Errorf("%v: in place", name)
							}
							if only && d.Path == RescaleByUpgrade {
								t.Errorf("%v: restart although in place only", name)
							}
							if (d.Path == RescaleInPlace || d.Path == RescaleByUpgrade) && (target < 1 || len(ps) > 0 && target > 128) {
								t.Errorf("%v: rescales to %d", name, target)
							}
							if d.Path == RescaleNone && (js != flinkapi.JobRunning || len(ps) == 0) {
								t.Errorf("%v: nothing to do for a job not running", name)
							}
							if m := d.Message(); m == "" || strings.Contains(m, "%!") {
								t.Errorf("%v: message %q", name, m)
							}
						}
					}
				}
			}
		}
	}
}
