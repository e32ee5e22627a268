//go:build integration

package lifecycle_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// realSession gets the test a plain session cluster with the given slots,
// the shared one of `make integration` if set (flinkfixture.SharedForTest),
// and a client of it that does not retry: the tests see every answer Flink
// gives.
func realSession(t *testing.T, ctx context.Context, slots int) (*flinkfixture.Cluster, *flinkapi.Client) {
	t.Helper()
	return sessionClient(t, flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: slots}))
}

// ownSession is realSession with a session cluster of the test's own, for
// a test that kills or restarts the cluster's processes.
func ownSession(t *testing.T, ctx context.Context, slots int) (*flinkfixture.Cluster, *flinkapi.Client) {
	t.Helper()
	return sessionClient(t, flinkfixture.StartForTest(t, ctx, flinkfixture.Config{Slots: slots}))
}

func sessionClient(t *testing.T, cluster *flinkfixture.Cluster) (*flinkfixture.Cluster, *flinkapi.Client) {
	t.Helper()
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	return cluster, c
}

// realEnv is the Env of the real-cluster tests: the client, polled every
// 200 ms.
func realEnv(c *flinkapi.Client) lifecycle.Env {
	return lifecycle.Env{Client: c, Timing: lifecycle.Timing{Poll: 200 * time.Millisecond}, Jars: testJars()}
}

// testJars reads the jars of the real-cluster tests, which name them by
// absolute paths in the fixture's cache or the test's directory: all of
// the file system (that jars stay in their root is tested with the fake).
var testJars = sync.OnceValue(func() *lifecycle.Jars {
	j, err := lifecycle.JarDir("/")
	if err != nil {
		panic(err)
	}
	return j
})

// realCall runs one Reconcile (or Delete) of spec on a real cluster,
// stores the status as JSON and reads it back, as a caller that restarts
// after every call, and waits as asked (at most a second).
func realCall(t *testing.T, ctx context.Context, ctrl *lifecycle.Controller, spec lifecycle.JobSpec, st *lifecycle.JobStatus, del bool) lifecycle.Result {
	t.Helper()
	var res lifecycle.Result
	var err error
	if del {
		// What PlanDelete says the call does, the call does.
		p, perr := ctrl.PlanDelete(ctx, spec, *st)
		if perr != nil {
			t.Fatalf("PlanDelete: %v", perr)
		}
		res, err = ctrl.Delete(ctx, spec, st)
		switch {
		case err != nil:
		case p.Action != "" && st.Action != p.Action:
			t.Errorf("PlanDelete: %s; Delete left the action %s", p, st.Action)
		case p.Action == "" && p.Dispose == "" && p.Blocked == "" && st.Reason != p.Reason:
			t.Errorf("PlanDelete: %s (%s); Delete reports %s", p, p.Reason, st.Reason)
		}
	} else {
		res, err = ctrl.Reconcile(ctx, spec, st)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	*st = lifecycle.JobStatus{}
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	time.Sleep(min(res.RequeueAfter, time.Second))
	return res
}

// realUntil calls Reconcile of *spec until done holds, at most limit
// long, and logs where the deployment stands then.
func realUntil(t *testing.T, ctx context.Context, what string, ctrl *lifecycle.Controller, spec *lifecycle.JobSpec, st *lifecycle.JobStatus,
	limit time.Duration, done func() bool) {
	t.Helper()
	begin := time.Now()
	for realCall(t, ctx, ctrl, *spec, st, false); !done(); realCall(t, ctx, ctrl, *spec, st, false) {
		if time.Since(begin) > limit || ctx.Err() != nil {
			t.Fatalf("%s: not reached in %v: %s %s: %s (action %s %s: %s)", what, limit, st.State, st.Reason, st.Message, st.Action, st.Progress.Outcome, st.Progress.Reason)
		}
	}
	t.Logf("%s: %s %s after %v (job %s): %s", what, st.State, st.Reason, time.Since(begin).Round(time.Millisecond), st.JobID, st.Message)
}
