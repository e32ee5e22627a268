//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// downtime polls a cluster's job list every 25 ms from a goroutine and
// sums the time during which no job was RUNNING.
type downtime struct {
	mu      sync.Mutex
	down    time.Duration
	last    time.Time
	running bool
	stop    chan struct{}
	done    chan struct{}
}

func watchDowntime(ctx context.Context, c *flinkapi.Client) *downtime {
	d := &downtime{stop: make(chan struct{}), done: make(chan struct{}), last: time.Now(), running: true}
	go func() {
		defer close(d.done)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-tick.C:
			}
			jobs, err := c.ListJobs(ctx)
			if err != nil {
				continue // unknown: the previous state counts on
			}
			running := false
			for _, j := range jobs {
				running = running || j.Status == flinkapi.JobRunning
			}
			d.mu.Lock()
			now := time.Now()
			if !d.running {
				d.down += now.Sub(d.last)
			}
			d.last, d.running = now, running
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *downtime) end() time.Duration {
	close(d.stop)
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down
}

// TestRealBlueGreen upgrades the counter job on a real Flink session
// cluster of FLINK_VERSION blue/green (the new job healthy before the old
// stops; the per-key counts continue), then the same job stop-then-start
// (Upgrade), and measures for each the time during which no version of
// the job was RUNNING and the total time.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealBlueGreen -v ./lifecycle/
func TestRealBlueGreen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 2)
	const keys = 2
	run := func(out string) flinkapi.RunJarRequest {
		return flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass,
			ProgramArgs: []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--checkpoint-interval", "300", "--name", "bluegreen"}}
	}
	env := lifecycle.Env{Client: c, Timing: lifecycle.Timing{Poll: 200 * time.Millisecond, Submit: 2 * time.Minute, Savepoint: 2 * time.Minute}, Jars: testJars()}
	out1, out2, out3 := cluster.OutDir("bluegreen-1"), cluster.OutDir("bluegreen-2"), cluster.OutDir("bluegreen-3")

	var p lifecycle.Progress
	sub := &lifecycle.Submit{Env: env, JarFile: cluster.TestJobJar, Run: run(out1)}
	if res, err := lifecycle.Run(ctx, sub, &p, nil); err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("submit: %v %s: %s", err, res.Outcome, p.Reason)
	}
	job1, jar := p.JobID, p.Submit.JarID
	flinkfixture.WaitCounts(t, ctx, out1, keys, 90*time.Second, func(_ string, n int64) bool { return n >= 20 })
	countsOf := func(dir string) map[string]int64 {
		counts, err := flinkfixture.ReadCounts(dir)
		if err != nil {
			t.Fatal(err)
		}
		return counts
	}

	// Blue/green: the new job runs beside the old until it is healthy.
	before := countsOf(out1)
	watch := watchDowntime(ctx, c)
	begin := time.Now()
	p = lifecycle.Progress{}
	bg := &lifecycle.BlueGreen{Env: env, Job: job1, JarID: jar, Run: run(out2), Window: 2 * time.Minute}
	phase := lifecycle.Phase("")
	res, err := lifecycle.Run(ctx, bg, &p, func(r lifecycle.Report) {
		if r.Progress.Phase != phase {
			phase = r.Progress.Phase
			t.Logf("blue/green: %s", phase)
		}
	})
	bgTotal, bgDown := time.Since(begin), watch.end()
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("blue/green: %v %s: %s", err, res.Outcome, p.Reason)
	}
	job2 := p.Submit.NewJobID
	if s, err := c.JobStatus(ctx, job1); err != nil || s != flinkapi.JobCanceled {
		t.Fatalf("the old job is %s (%v)", s, err)
	}
	flinkfixture.WaitCounts(t, ctx, out2, keys, 90*time.Second, func(k string, n int64) bool { return n > before[k] })
	// The new job started from the savepoint: it counted on from there.
	for k, n := range countsOf(out2) {
		if n < before[k] {
			t.Errorf("key %s: %d in the new job, %d in the old one before", k, n, before[k])
		}
	}

	// Stop-then-start of the same job.
	before = countsOf(out2)
	watch = watchDowntime(ctx, c)
	begin = time.Now()
	p = lifecycle.Progress{}
	up := &lifecycle.Upgrade{Env: env, Job: job2, JarID: jar, Run: run(out3), Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint}}
	res, err = lifecycle.Run(ctx, up, &p, nil)
	upTotal, upDown := time.Since(begin), watch.end()
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("upgrade: %v %s: %s", err, res.Outcome, p.Reason)
	}
	flinkfixture.WaitCounts(t, ctx, out3, keys, 90*time.Second, func(k string, n int64) bool { return n > before[k] })

	t.Logf("BLUEGREEN TIMING Flink %s: blue/green no job RUNNING for %v of %v in all; stop-then-start upgrade no job RUNNING for %v of %v in all",
		cluster.FlinkVersion, bgDown.Round(time.Millisecond), bgTotal.Round(time.Millisecond), upDown.Round(time.Millisecond), upTotal.Round(time.Millisecond))
	if bgDown > 0 {
		t.Errorf("blue/green left %v without a RUNNING job", bgDown)
	}
}
