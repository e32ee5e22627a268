package lifecycle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRetentionBoundsUpgradeSavepoints: with maxCount 3 and neither
// disposeUpdate nor disposeUser, eight upgrades leave three savepoints
// in the history and on storage, the one the running job started from
// (and a rollback would restore) among them; the others are disposed of
// on Flink's storage, not only forgotten.
func TestRetentionBoundsUpgradeSavepoints(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{MaxCount: 3}
	k.settle("deploy", spec)
	var taken []string
	for i := range 8 {
		k.srv.Clock().Advance(5 * time.Second)
		spec.Job.Args = append(spec.Job.Args[:len(k.spec("/out").Job.Args)], "--name", fmt.Sprintf("v%d", i+2))
		k.settle(fmt.Sprintf("upgrade %d", i+1), spec)
		if k.st.Action != ActionUpgrade || k.st.UpgradeFrom.Location == "" {
			t.Fatalf("upgrade %d: action %s, upgrade from %+v", i+1, k.st.Action, k.st.UpgradeFrom)
		}
		taken = append(taken, k.st.UpgradeFrom.Location)
		k.run(spec, time.Minute) // at rest: the retention's disposals, one a call
	}
	recs := k.st.Savepoints.Records
	if len(recs) != 3 {
		t.Fatalf("the history holds %d savepoints after 8 upgrades with maxCount 3, want 3: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Reason != savepoint.ReasonUpdate {
			t.Errorf("record %+v: want an update savepoint", r)
		}
	}
	if newest := taken[len(taken)-1]; !hasLocation(recs, newest) || k.st.UpgradeFrom.Location != newest || k.job().RestoredFrom != newest {
		t.Errorf("the running job's restore point %s is not kept: history %+v, upgrade from %+v", newest, recs, k.st.UpgradeFrom)
	}
	var onStorage []string
	for _, loc := range taken {
		ok, err := k.srv.SavepointExists(loc)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			onStorage = append(onStorage, loc)
		}
		if ok != hasLocation(recs, loc) {
			t.Errorf("savepoint %s: on storage %v, in the history %v", loc, ok, hasLocation(recs, loc))
		}
	}
	if want := taken[len(taken)-3:]; !slices.Equal(onStorage, want) {
		t.Errorf("on storage: %v, want the newest three %v", onStorage, want)
	}
}

// TestRetentionReasons: MaxCount bounds the savepoints of every reason
// the deployment takes them for, also a user's one-shot request and
// whatever disposeUpdate says; an imported savepoint is kept (and
// counts towards MaxCount) unless disposeUser allows its disposal; the
// restore points (Latest, UpgradeFrom) are never chosen.
func TestRetentionReasons(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2025, 1, 1, 0, m, 0, 0, time.UTC) }
	reasons := []savepoint.Reason{savepoint.ReasonImported, savepoint.ReasonScheduled, savepoint.ReasonUpdate, savepoint.ReasonUser,
		savepoint.ReasonStop, savepoint.ReasonRestart, savepoint.ReasonDelete, savepoint.ReasonScheduled}
	var st JobStatus
	for i, r := range reasons {
		st.Savepoints = st.Savepoints.Add(savepoint.Record{Location: fmt.Sprintf("s3://b/sp-%d", i), Time: at(i), Reason: r, JobID: flinkapi.JobID("j")})
	}
	st.UpgradeFrom = st.Savepoints.Records[2]
	st.Latest = st.Savepoints.Records[len(reasons)-1]
	for _, tc := range []struct {
		name   string
		policy SavepointPolicy
		want   []int // the records chosen, oldest first
	}{
		// Kept: the import, the rollback's restore point (2), the newest
		// (7): three, and so all others go.
		{"maxCount 3", SavepointPolicy{MaxCount: 3}, []int{1, 3, 4, 5, 6}},
		{"maxCount 3, disposeUpdate (no effect)", SavepointPolicy{MaxCount: 3, DisposeUpdate: true}, []int{1, 3, 4, 5, 6}},
		{"maxCount 5", SavepointPolicy{MaxCount: 5}, []int{1, 3, 4}},
		{"maxCount 3, disposeUser", SavepointPolicy{MaxCount: 3, DisposeUser: true}, []int{0, 1, 3, 4, 5}},
		{"maxAge 4m30s", SavepointPolicy{MaxAge: policy.Duration(270 * time.Second)}, []int{1, 3, 4}},
	} {
		c := &Controller{}
		var got []int
		for _, r := range savepoint.ChooseDisposals(st.Savepoints.Records, c.retentionFor(JobSpec{Savepoints: tc.policy}, &st), at(9)) {
			got = append(got, slices.IndexFunc(st.Savepoints.Records, func(x savepoint.Record) bool { return x.Location == r.Location }))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: chose %v, want %v", tc.name, got, tc.want)
		}
	}
}
