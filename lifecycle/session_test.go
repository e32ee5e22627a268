package lifecycle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestSessionPlan: a jar or job any field of any claim names is kept; so
// are young jars, young jobs, ended jobs and jars Keep protects.
func TestSessionPlan(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	var jars []flinkapi.Jar
	for _, id := range []flinkapi.JarID{"spec.jar", "status.jar", "deployed.jar", "stable.jar", "target.jar", "progress.jar", "unused.jar", "other.jar"} {
		jars = append(jars, flinkapi.Jar{ID: id, Name: string(id), Uploaded: old})
	}
	jars = append(jars, flinkapi.Jar{ID: "young.jar", Uploaded: now.Add(-time.Minute)})
	id := func(n byte) flinkapi.JobID { return flinkapi.JobID(bytes.Repeat([]byte{'0' + n}, 32)) }
	var jobs []flinkapi.JobOverview
	for n := byte(0); n < 9; n++ {
		jobs = append(jobs, flinkapi.JobOverview{ID: id(n), State: flinkapi.JobRunning, StartTime: old})
	}
	jobs[7].State = flinkapi.JobFinished
	jobs[8].StartTime = now.Add(-time.Minute)
	unclaimedRestarting := flinkapi.JobOverview{ID: "abcdefabcdefabcdefabcdefabcdefab", State: flinkapi.JobRestarting, StartTime: old}
	jobs = append(jobs, unclaimedRestarting)
	a := Claim{Spec: JobSpec{Job: JobTemplate{JarID: "spec.jar"}}, Status: JobStatus{JarID: "status.jar", Deployed: JobTemplate{JarID: "deployed.jar"},
		Stable: JobTemplate{JarID: "stable.jar"}, JobID: id(0), Progress: Progress{JobID: id(1), Submit: SubmitProgress{NewJobID: id(2)}, Replace: ReplaceProgress{PreviousJobID: id(3)}}}}
	b := Claim{Status: JobStatus{Target: JobTemplate{JarID: "target.jar"}, Progress: Progress{Target: id(4), Submit: SubmitProgress{JarID: "progress.jar"}, Replace: ReplaceProgress{Observed: Observed{Adopt: id(5)}}}}}
	r := SessionPlan(jars, jobs, []Claim{a, b}, SessionOptions{Keep: func(j flinkapi.Jar) bool { return j.Name == "other.jar" }}, now)
	if len(r.UnusedJars) != 1 || r.UnusedJars[0].ID != "unused.jar" {
		t.Errorf("unused jars %+v, want unused.jar only", r.UnusedJars)
	}
	var unclaimed []flinkapi.JobID
	for _, j := range r.Unclaimed {
		unclaimed = append(unclaimed, j.ID)
	}
	if want := []flinkapi.JobID{id(6), unclaimedRestarting.ID}; !slices.Equal(unclaimed, want) {
		t.Errorf("unclaimed %v, want %v", unclaimed, want)
	}
	// Without claims every old jar but the protected one goes, and a
	// grace of a second lets the young ones go too.
	r = SessionPlan(jars, jobs, nil, SessionOptions{JarGrace: time.Second, JobGrace: time.Second}, now)
	if len(r.UnusedJars) != len(jars) || len(r.Unclaimed) != len(jobs)-1 {
		t.Errorf("without claims: %d jars of %d, %d jobs of %d", len(r.UnusedJars), len(jars), len(r.Unclaimed), len(jobs)-1)
	}
}

// TestCleanSession: on the fake session cluster the jar of an earlier
// version is deleted once no spec uses it, the current one stays, a jar
// deleted meanwhile counts as deleted, and a job started by hand is
// reported and stopped with a savepoint recorded under its name.
func TestCleanSession(t *testing.T) {
	k := newCluster(t, true)
	ctx := context.Background()
	spec := k.spec("/out")
	k.settle("create", spec)
	v1 := k.st.JarID
	spec.Job.JarFile = filepath.Join(filepath.Dir(k.jar), "job-v2.jar")
	if err := os.WriteFile(spec.Job.JarFile, counterBuild(2), 0o600); err != nil {
		t.Fatal(err)
	}
	k.settle("update", spec)
	v2 := k.st.JarID
	if v1 == v2 || v2 == "" {
		t.Fatalf("jars %s and %s", v1, v2)
	}
	stray, err := k.c.UploadJarReader(ctx, "stray.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		t.Fatal(err)
	}
	hand := flinkapi.NewJobID()
	if _, err := k.c.RunJar(ctx, stray, flinkapi.RunJarRequest{JobID: hand, ProgramArgs: []string{"--out", "/by-hand", "--keys", "1"}}); err != nil {
		t.Fatal(err)
	}
	claims := []Claim{{Spec: spec, Status: k.st}}
	now := func() time.Time { return k.srv.Clock().Now() }

	// Young: nothing is touched.
	r, err := CleanSession(ctx, k.c, claims, SessionOptions{}, now())
	if err != nil || len(r.Deleted) != 0 || len(r.Unclaimed) != 0 {
		t.Fatalf("young: %+v, %v", r, err)
	}
	k.srv.Clock().Advance(20 * time.Minute)
	k.run(spec, 5*time.Second)
	// The stray jar is deleted by someone else between the list and the delete.
	r, err = CleanSession(ctx, RacyDelete{k.c, stray}, claims, SessionOptions{}, now())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(r.Deleted)
	if want := []flinkapi.JarID{v1, stray}; !slices.Equal(r.Deleted, sorted(want)) {
		t.Errorf("deleted %v, want %v", r.Deleted, want)
	}
	left, err := k.c.ListJars(ctx)
	if err != nil || len(left) != 2 && len(left) != 1 {
		t.Fatalf("jars left: %+v, %v", left, err)
	}
	for _, j := range left {
		if j.ID == v1 {
			t.Errorf("the earlier version's jar %s is still there", v1)
		}
	}
	if !slices.ContainsFunc(left, func(j flinkapi.Jar) bool { return j.ID == v2 }) {
		t.Errorf("the current jar %s was deleted", v2)
	}
	if len(r.Unclaimed) != 1 || r.Unclaimed[0].ID != hand {
		t.Fatalf("unclaimed %+v, want the job started by hand %s", r.Unclaimed, hand)
	}
	var p Progress
	res, err := Run(ctx, UnclaimedTeardown(Env{Client: k.c, Clock: k.srv.Clock()}, k.store, hand), &p, nil)
	rec, ok, _ := k.store.Get(ctx, UnclaimedName(hand))
	if exists, _ := k.srv.SavepointExists(rec.Location); err != nil || res.Outcome != OutcomeSucceeded || !ok || rec.Location != p.Savepoint.Location || !exists {
		t.Errorf("teardown of the unclaimed job: %+v, %v; recorded %+v (%v)", res, err, rec, ok)
	}
	if info, _ := k.srv.Job(k.st.JobID); info.State != flinkapi.JobRunning {
		t.Errorf("the claimed job is %s", info.State)
	}
}

// RacyDelete is a client whose delete of the jar Gone finds it deleted by
// someone else between the list and the delete: Flink's answer for a jar
// it does not know. Exported for the integration tests of package
// lifecycle_test.
type RacyDelete struct {
	*flinkapi.Client
	Gone flinkapi.JarID
}

// DeleteJar deletes jar; Gone twice.
func (r RacyDelete) DeleteJar(ctx context.Context, jar flinkapi.JarID) error {
	if jar == r.Gone {
		if err := r.Client.DeleteJar(ctx, jar); err != nil {
			return err
		}
	}
	return r.Client.DeleteJar(ctx, jar)
}

func sorted(ids []flinkapi.JarID) []flinkapi.JarID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
