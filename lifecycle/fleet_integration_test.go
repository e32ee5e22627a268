//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// pathLog records the paths of the requests sent through it.
type pathLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *pathLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.paths = append(l.paths, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (l *pathLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.paths
	l.paths = nil
	return p
}

// TestRealSharedObservation checks the shared observation against a real
// session cluster of FLINK_VERSION, through a client with a request
// budget: three jobs at rest are checked with GET /jobs/overview alone
// (the one whose health is judged reads its checkpoint statistics every
// other poll too), a job cancelled from outside is seen at the next poll
// and read in full, and the others stay at rest. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealSharedObservation -v ./lifecycle/
func TestRealSharedObservation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 4})
	log := &pathLog{}
	budget, err := flinkapi.NewRequestBudget(50, 20, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithHTTPClient(&http.Client{Transport: log}), flinkapi.WithRequestBudget(budget))
	if err != nil {
		t.Fatal(err)
	}
	shared := &lifecycle.SharedObservation{Client: c, MaxAge: 500 * time.Millisecond}
	const n = 3
	specs := make([]lifecycle.JobSpec, n)
	sts := make([]lifecycle.JobStatus, n)
	ctrls := make([]*lifecycle.Controller, n)
	for i := range n {
		specs[i] = lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", cluster.OutDir(fmt.Sprintf("fleet-%d", i)), "--keys", "2", "--rate", "20", "--checkpoint-interval", "500"}}}
		ctrls[i] = &lifecycle.Controller{Env: realEnv(c), Name: fmt.Sprintf("fleet/job-%d", i), PollInterval: time.Second, Shared: shared}
	}
	specs[2].Health = policy.HealthPolicy{Action: policy.HealthReport}
	t.Cleanup(func() {
		for _, st := range sts {
			if st.JobID != "" {
				_ = c.CancelJob(context.Background(), st.JobID)
			}
		}
	})
	for i := range n {
		realUntil(t, ctx, fmt.Sprintf("job %d deployed", i), ctrls[i], &specs[i], &sts[i], 2*time.Minute, func() bool { return sts[i].Converged(specs[i]) })
	}
	poll := func() {
		for i := range n {
			if _, err := ctrls[i].Reconcile(ctx, specs[i], &sts[i]); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(600 * time.Millisecond)
	}
	// At rest: every job settled (the last deployed may earn its
	// stability, and read its own details, at the first polls).
	for deadline := time.Now().Add(time.Minute); ; poll() {
		if sts[0].Settled && sts[1].Settled && sts[2].Settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not at rest: %s/%s, %s/%s, %s/%s", sts[0].Reason, sts[0].Message, sts[1].Reason, sts[1].Message, sts[2].Reason, sts[2].Message)
		}
	}
	// ... and served by the shared observation: a poll sends nothing of
	// a job's own but the judged job's checkpoint statistics (on a busy
	// machine a job may read in full a little longer, while its tasks'
	// last change is not before its last health sample).
	ownRequests := func(sent []string) []string {
		var own []string
		for _, p := range sent {
			if !strings.HasSuffix(p, "/jobs/overview") && !strings.HasSuffix(p, "/jobs/"+string(sts[2].JobID)+"/checkpoints") {
				own = append(own, p)
			}
		}
		return own
	}
	for deadline := time.Now().Add(time.Minute); ; {
		log.take()
		poll()
		own := ownRequests(log.take())
		if len(own) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("at rest for a minute, a poll still sends requests of a job's own: %v", own)
		}
	}
	reads := shared.Reads()
	begin := time.Now()
	for range 5 {
		poll()
	}
	sent := log.take()
	overviews, health := 0, 0
	for _, p := range sent {
		switch {
		case strings.HasSuffix(p, "/jobs/overview"):
			overviews++
		case strings.HasSuffix(p, "/jobs/"+string(sts[2].JobID)+"/checkpoints"):
			health++
		default:
			t.Errorf("at rest, a request of a job's own: %s (all: %v)", p, sent)
		}
	}
	t.Logf("5 polls of %d jobs at rest in %v: %d requests, %d overview reads, %d health reads of the job judged", n, time.Since(begin).Round(time.Millisecond),
		len(sent), shared.Reads()-reads, health)
	if overviews == 0 || overviews > 5 || health < 1 || health > 4 {
		t.Errorf("5 polls at rest sent %d overviews (want 1 to 5) and %d health reads (want 1 to 4: not every poll)", overviews, health)
	}
	for i := range n {
		if !sts[i].Converged(specs[i]) {
			t.Errorf("job %d at rest: %s %s", i, sts[i].Reason, sts[i].Message)
		}
	}

	// Job 1 is cancelled from outside (the Flink UI).
	if err := c.CancelJob(ctx, sts[1].JobID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for sts[1].Situation != lifecycle.SituationCancelled {
		if time.Now().After(deadline) {
			t.Fatalf("the cancel is not seen: %s %s", sts[1].Situation, sts[1].Message)
		}
		poll()
	}
	own := 0
	for _, p := range log.take() {
		health := strings.HasSuffix(p, "/jobs/"+string(sts[2].JobID)+"/checkpoints") // job 2's health, every other poll
		if strings.Contains(p, string(sts[0].JobID)) || strings.Contains(p, string(sts[2].JobID)) && !health {
			own++
		}
	}
	if own != 0 || !sts[0].Converged(specs[0]) || !sts[2].Converged(specs[2]) {
		t.Errorf("the other jobs: %d requests of their own; converged %v, %v", own, sts[0].Converged(specs[0]), sts[2].Converged(specs[2]))
	}

	// The watch: job 0 at rest is called back at its resync, job 2 (its
	// health judged) at its next health check; job 0 cancelled from
	// outside is the one change the next read names, and is seen as soon
	// as Flink's cache of its details shows it, not after Resync.
	if _, err := shared.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if ids, err := shared.Changes(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("at rest, changes %v, %v", ids, err)
	}
	for i, want := range map[int][2]time.Duration{0: {lifecycle.DefaultResync / 2, lifecycle.DefaultResync * 3 / 2}, 2: {0, 2 * time.Second}} {
		res, err := ctrls[i].Reconcile(ctx, specs[i], &sts[i])
		if err != nil || res.RequeueAfter <= want[0] || res.RequeueAfter > want[1] {
			t.Errorf("watched, job %d at rest: RequeueAfter %v, %v; want within (%v, %v]", i, res.RequeueAfter, err, want[0], want[1])
		}
	}
	if err := c.CancelJob(ctx, sts[0].JobID); err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	time.Sleep(600 * time.Millisecond)
	ids, err := shared.Changes(ctx)
	if err != nil || len(ids) != 1 || ids[0] != sts[0].JobID {
		t.Fatalf("changes after job 0's cancel: %v, %v; want %s alone", ids, err, sts[0].JobID)
	}
	calls := 0
	for sts[0].Situation != lifecycle.SituationCancelled {
		calls++
		res, err := ctrls[0].Reconcile(ctx, specs[0], &sts[0])
		if err != nil {
			t.Fatal(err)
		}
		if sts[0].Situation == lifecycle.SituationCancelled {
			break
		}
		if res.RequeueAfter > (lifecycle.Timing{}).WithDefaults().Cache+time.Second || calls > 10 {
			t.Fatalf("job 0 still %s after %d calls: called back after %v; want within Flink's cache time", sts[0].Situation, calls, res.RequeueAfter)
		}
		time.Sleep(res.RequeueAfter)
	}
	t.Logf("watched: job 0's cancel named by the overview and seen %v after it, in %d calls", time.Since(cancelled).Round(time.Millisecond), calls)
}
