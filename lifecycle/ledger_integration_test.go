//go:build integration

package lifecycle_test

import (
	"context"
	"errors"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRealSavepointLedger checks the savepoint ledger against a real
// session cluster of FLINK_VERSION, its state in an object store (the
// shared cluster of `make integration`, or one started with its own
// store): periodic savepoints with a retention of 2, an upgrade, a
// rescale (by an upgrade), a late savepoint (a savepoint deadline of a
// millisecond: the periodic savepoint times out and is recorded once
// Flink completed it), a retention of 1 while the job is suspended, and
// a delete that disposes of all but the final savepoint. After each step
// it counts the savepoint directories of the deployment's jobs in the
// bucket, checks that every one of them is in the status's history and
// every record of the history in the bucket, and compares the bucket's
// listing under the deployment's directories with the ledger
// (storageLedger.check); after the upgrade and the rescale the restored
// counts continue. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealSavepointLedger -v ./lifecycle/
func TestRealSavepointLedger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2, ObjectStore: true})
	// The answers to savepoint polls can be lost on the way (see the late
	// savepoint below).
	polls := &losePolls{next: http.DefaultTransport}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithHTTPClient(&http.Client{Transport: polls}))
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "ledger/counter",
		PollInterval: time.Second, RetryInterval: 5 * time.Second}
	sl := newStorageLedger(t, ctrl, cluster)
	out := cluster.OutDir("ledger")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "500"}},
		Update:     policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		Savepoints: lifecycle.SavepointPolicy{Interval: policy.Duration(2 * time.Second), MaxCount: 2},
	}
	var st lifecycle.JobStatus
	jobs := map[flinkapi.JobID]bool{}
	t.Cleanup(func() {
		for id := range jobs {
			_ = c.CancelJob(context.Background(), id)
		}
	})
	track := func() { jobs[st.JobID] = st.JobID != "" }

	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	track()
	atRest(t, ctx, "deployed", ctrl, &spec, &st)
	sl.check("deployed", spec, &st)
	taken := func() int {
		n := 0
		for _, r := range st.Savepoints.Records {
			if r.Reason == savepoint.ReasonScheduled {
				n++
			}
		}
		return n
	}
	// Periodic savepoints for 12 s: about 6 taken, 2 kept.
	begin := time.Now()
	realUntil(t, ctx, "periodic savepoints", ctrl, &spec, &st, time.Minute, func() bool { return time.Since(begin) > 12*time.Second })
	// The ledger disposes of one savepoint per call, each after Flink's
	// answer: savepoints taken faster than that (on a loaded machine) are
	// disposed of once the retention catches up, before the next is due.
	realUntil(t, ctx, "the retention caught up", ctrl, &spec, &st, time.Minute, func() bool {
		return taken() <= 2 && st.Disposing.Location == "" && !st.InFlight()
	})
	track()
	atRest(t, ctx, "periodic", ctrl, &spec, &st)
	onDisk := ledgerCheck(t, "periodic, maxCount 2", cluster.SavepointURI, jobs, &st)
	if taken() > 2 || onDisk > 3 {
		t.Errorf("maxCount 2: %d scheduled savepoints in the history, %d directories on disk", taken(), onDisk)
	}
	sl.check("periodic maxCount 2", spec, &st)

	// An upgrade: the savepoint it took stays (Update), the old job's
	// periodic ones go down to the retention.
	old := st.JobID
	counts, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	spec.Job.Args = []string{"--out", out, "--keys", "2", "--rate", "41", "--checkpoint-interval", "500"}
	realUntil(t, ctx, "upgraded", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.JobID != old && st.Converged(spec) })
	track()
	countsContinue(t, ctx, out, 2, counts, 20)
	begin = time.Now()
	realUntil(t, ctx, "after the upgrade", ctrl, &spec, &st, time.Minute, func() bool { return time.Since(begin) > 6*time.Second })
	atRest(t, ctx, "after the upgrade", ctrl, &spec, &st)
	onDisk = ledgerCheck(t, "after the upgrade", cluster.SavepointURI, jobs, &st)
	sl.check("upgrade", spec, &st)
	if st.UpgradeFrom.Location == "" || !hasRecord(&st, st.UpgradeFrom.Location) {
		t.Errorf("the upgrade's savepoint %q is not in the history", st.UpgradeFrom.Location)
	}
	if onDisk > 4 {
		t.Errorf("after the upgrade: %d directories on disk, want at most 4 (2 periodic, the upgrade's, one just taken)", onDisk)
	}

	// A rescale, through an upgrade (the cluster's default scheduler).
	old = st.JobID
	if counts, err = flinkfixture.ReadCounts(out); err != nil {
		t.Fatal(err)
	}
	spec.Job.Parallelism = 2
	realUntil(t, ctx, "rescaled", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.JobID != old && st.Converged(spec) })
	track()
	if d, err := c.Job(ctx, st.JobID); err != nil {
		t.Fatal(err)
	} else {
		for _, v := range d.Vertices {
			if v.Parallelism != 2 {
				t.Errorf("parallelism 2: vertex %s of %s runs at %d", v.Name, st.JobID, v.Parallelism)
			}
		}
	}
	countsContinue(t, ctx, out, 2, counts, 20)
	atRest(t, ctx, "rescaled", ctrl, &spec, &st)
	ledgerCheck(t, "after the rescale", cluster.SavepointURI, jobs, &st)
	sl.check("rescale", spec, &st)

	// A late savepoint: with a savepoint deadline of a millisecond and
	// the answers to its polls lost, the periodic savepoint's action
	// times out without knowing that Flink completed it (Flink takes
	// tens of milliseconds: a poll that got through would find it
	// done); once the answers get through again it is looked up and
	// recorded.
	spec.Update.SavepointDeadline = policy.Duration(time.Millisecond)
	polls.lose.Store(true)
	late := false
	realUntil(t, ctx, "a late savepoint recorded", ctrl, &spec, &st, time.Minute, func() bool {
		if st.LateSavepoint.Pending() {
			late = true
			polls.lose.Store(false)
		}
		return late && !st.LateSavepoint.Pending()
	})
	polls.lose.Store(false)
	spec.Update.SavepointDeadline = 0
	atRest(t, ctx, "late savepoint", ctrl, &spec, &st)
	if st.SavepointFailures != 0 || st.Latest.Reason != savepoint.ReasonScheduled || !hasRecord(&st, st.Latest.Location) {
		t.Errorf("after the late savepoint: %d failures, latest %+v", st.SavepointFailures, st.Latest)
	}
	ledgerCheck(t, "after the late savepoint", cluster.SavepointURI, jobs, &st)
	sl.check("late savepoint", spec, &st)

	// Suspended: the retention still runs.
	spec.State = lifecycle.DesiredSuspended
	realUntil(t, ctx, "suspended", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Suspended && !st.InFlight() })
	spec.Savepoints.MaxCount, spec.Savepoints.DisposeUpdate = 1, true
	before := ledgerCheck(t, "suspended, maxCount 2", cluster.SavepointURI, jobs, &st)
	realUntil(t, ctx, "retention while suspended", ctrl, &spec, &st, time.Minute, func() bool {
		return len(st.Savepoints.Records) <= 2 && st.Disposing.Location == ""
	})
	onDisk = ledgerCheck(t, "suspended, maxCount 1", cluster.SavepointURI, jobs, &st)
	sl.check("suspended maxCount 1", spec, &st)
	t.Logf("retention while suspended: %d → %d savepoint directories on disk", before, onDisk)
	if onDisk >= before {
		t.Errorf("nothing disposed of while suspended: %d → %d", before, onDisk)
	}

	// Delete, disposing of all but the final savepoint.
	spec.Savepoints.DisposeOnDelete, spec.Savepoints.MaxCount = true, 3
	spec.State = lifecycle.DesiredRunning
	realUntil(t, ctx, "resumed", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	track()
	begin = time.Now()
	realUntil(t, ctx, "periodic, maxCount 3", ctrl, &spec, &st, time.Minute, func() bool { return time.Since(begin) > 8*time.Second })
	atRest(t, ctx, "before the delete", ctrl, &spec, &st)
	before = ledgerCheck(t, "before the delete", cluster.SavepointURI, jobs, &st)
	sl.check("before the delete", spec, &st)
	deadline := time.Now().Add(2 * time.Minute)
	for res := realCall(t, ctx, ctrl, spec, &st, true); !res.Done; res = realCall(t, ctx, ctrl, spec, &st, true) {
		if time.Now().After(deadline) {
			t.Fatalf("delete not done: %s %s", st.Reason, st.Message)
		}
	}
	onDisk = ledgerCheck(t, "deleted", cluster.SavepointURI, jobs, &st)
	sl.check("deleted DisposeOnDelete", spec, &st)
	t.Logf("delete with DisposeOnDelete: %d → %d savepoint directories on disk; final %s", before, onDisk, st.Latest.Location)
	if before < 3 || onDisk != 1 || len(st.Savepoints.Records) != 1 || st.Savepoints.Records[0].Location != st.Latest.Location {
		t.Errorf("after the delete: %d on disk, history %+v, latest %s", onDisk, st.Savepoints.Records, st.Latest.Location)
	}
}

// losePolls loses the answers to savepoint polls (GET
// /jobs/:jobid/savepoints/:triggerid) while lose is set, as a
// connection reset after the request reached Flink.
type losePolls struct {
	lose atomic.Bool
	next http.RoundTripper
}

func (l *losePolls) RoundTrip(req *http.Request) (*http.Response, error) {
	if !l.lose.Load() || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/savepoints/") {
		return l.next.RoundTrip(req)
	}
	res, err := l.next.RoundTrip(req)
	if err == nil {
		res.Body.Close()
	}
	return nil, errors.New("connection reset by peer (the answer to a savepoint poll lost)")
}

func hasRecord(st *lifecycle.JobStatus, loc string) bool {
	for _, r := range st.Savepoints.Records {
		if r.Location == loc {
			return true
		}
	}
	return false
}

// ledgerCheck counts the savepoint directories of the given jobs under
// the savepoint folder dir (a file: or s3:// URI: on disk, or in the
// object store), checks that each is in the history (a disposal in
// progress aside) and each record of the history on disk, and logs the
// counts.
func ledgerCheck(t *testing.T, what, dir string, jobs map[flinkapi.JobID]bool, st *lifecycle.JobStatus) int {
	t.Helper()
	names, err := flinkfixture.ListChildren(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	disk := map[string]bool{}
	for _, name := range names {
		for id := range jobs {
			if strings.HasPrefix(name, "savepoint-"+string(id)[:6]+"-") {
				disk[name] = true
			}
		}
	}
	recorded := func(name string) bool {
		return slices.ContainsFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return path.Base(r.Location) == name })
	}
	// A savepoint still being taken (its directory without _metadata,
	// or completed since the action in flight or the late savepoint's
	// look-up last asked) is not in the history yet: one is allowed.
	pending := st.InFlight() && st.Progress.Savepoint.Status.TriggerID != "" || st.LateSavepoint.TriggerID != ""
	for name := range disk {
		if recorded(name) || strings.HasSuffix(st.Disposing.Location, name) || strings.HasSuffix(st.Latest.Location, name) {
			continue
		}
		if !flinkfixture.LocationExists(strings.TrimSuffix(dir, "/") + "/" + name + "/_metadata") {
			t.Logf("%s: savepoint %s on disk without _metadata (being taken)", what, name)
			continue
		}
		if pending {
			pending = false
			t.Logf("%s: savepoint %s on disk, completed while an action or look-up in flight asks after it", what, name)
			continue
		}
		t.Errorf("%s: savepoint %s on disk, not in the history", what, name)
	}
	for _, r := range st.Savepoints.Records {
		if !disk[path.Base(r.Location)] && r.Location != st.Disposing.Location {
			t.Errorf("%s: the history keeps %s, not on disk", what, r.Location)
		}
	}
	t.Logf("%s: %d savepoint directories on disk, %d records in the history", what, len(disk), len(st.Savepoints.Records))
	return len(disk)
}
