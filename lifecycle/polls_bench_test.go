package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// The measurements of this file count the requests an operation sends to
// the fake while it waits for Flink, and the detection lag of its waits:
// the time on the fake's clock between the change (a job reaching
// RUNNING, a savepoint completing, a checkpoint completing) and the
// request that saw it. Both are deterministic on the fake's manual clock.

// pollStart is the fake's time from a jar run to the job RUNNING
// (INITIALIZING 150 ms, CREATED 200 ms).
const pollStart = 350 * time.Millisecond

// pollFigures is what one measured run sent and how late it saw each
// change it waited for.
type pollFigures struct {
	requests int
	lags     []time.Duration
}

func (f pollFigures) maxLag() time.Duration {
	var m time.Duration
	for _, l := range f.lags {
		m = max(m, l)
	}
	return m
}

func (f pollFigures) meanLag() time.Duration {
	if len(f.lags) == 0 {
		return 0
	}
	var s time.Duration
	for _, l := range f.lags {
		s += l
	}
	return s / time.Duration(len(f.lags))
}

// pollServer starts a fake with the counter jar uploaded and, if running,
// the counter job running for 5 s.
func pollServer(tb testing.TB, running bool, opts ...flinktest.Option) *env {
	tb.Helper()
	opts = append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1)}, opts...)
	srv := flinktest.NewServer(opts...)
	tb.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	jar, err := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{srv: srv, c: c, jar: jar}
	if running {
		e.job = flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
		if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: e.job, ProgramArgs: counterArgs()}); err != nil {
			tb.Fatal(err)
		}
		srv.Clock().Advance(5 * time.Second)
	}
	srv.ClearRequests()
	return e
}

// lastOf is the time of the last request on route at or after from.
func lastOf(reqs []flinktest.Request, route string, from time.Time) time.Time {
	var t time.Time
	for _, r := range reqs {
		if r.Route == route && !r.Time.Before(from) {
			t = r.Time
		}
	}
	return t
}

// firstOf is the time of the first request on route.
func firstOf(reqs []flinktest.Request, route string) time.Time {
	for _, r := range reqs {
		if r.Route == route {
			return r.Time
		}
	}
	return time.Time{}
}

const (
	routeRun          = "POST /jars/:jarid/run"
	routeStatus       = "GET /jobs/:jobid/status"
	routeTrigger      = "POST /jobs/:jobid/savepoints"
	routeStop         = "POST /jobs/:jobid/stop"
	routeTriggerState = "GET /jobs/:jobid/savepoints/:triggerid"
)

// runOp runs op to its end with Run on the fake's clock.
func runOp(tb testing.TB, op Stepper, onReport func(Report)) Progress {
	tb.Helper()
	var p Progress
	res, err := Run(context.Background(), op, &p, onReport)
	if err != nil || res.Outcome != OutcomeSucceeded {
		tb.Fatalf("Run = %+v, %v (%s)", res, err, p.Reason)
	}
	return p
}

// measureStart submits a job and waits for it to run.
func measureStart(tb testing.TB, timing Timing) pollFigures {
	e := pollServer(tb, false)
	runOp(tb, &Submit{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, JarID: e.jar,
		Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}}, nil)
	reqs := e.srv.Requests()
	running := firstOf(reqs, routeRun).Add(pollStart)
	return pollFigures{requests: len(reqs), lags: []time.Duration{lastOf(reqs, routeStatus, running).Sub(running)}}
}

// measureSavepoint takes a savepoint that lasts d.
func measureSavepoint(tb testing.TB, timing Timing, d time.Duration) pollFigures {
	e := pollServer(tb, true, flinktest.WithSavepointDuration(d))
	runOp(tb, &TakeSavepoint{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, Job: e.job}, nil)
	reqs := e.srv.Requests()
	done := firstOf(reqs, routeTrigger).Add(d)
	return pollFigures{requests: len(reqs), lags: []time.Duration{lastOf(reqs, routeTriggerState, done).Sub(done)}}
}

// measureUpgrade upgrades the running job with a savepoint that lasts d,
// with a progress callback if report is set.
func measureUpgrade(tb testing.TB, timing Timing, d time.Duration, report bool) pollFigures {
	e := pollServer(tb, true, flinktest.WithSavepointDuration(d))
	var onReport func(Report)
	reports := 0
	if report {
		onReport = func(Report) { reports++ }
	}
	runOp(tb, &Upgrade{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar,
		Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}, onReport)
	if report && reports == 0 {
		tb.Fatal("the callback was never called")
	}
	reqs := e.srv.Requests()
	stopped := firstOf(reqs, routeStop).Add(d)
	running := firstOf(reqs, routeRun).Add(pollStart)
	return pollFigures{requests: len(reqs), lags: []time.Duration{
		lastOf(reqs, routeTriggerState, stopped).Sub(stopped), lastOf(reqs, routeStatus, running).Sub(running)}}
}

// measureStable deploys a new job checkpointing every 10 s with a
// Controller that polls every 30 s, until the job counts as stable. The
// lag is the time from the first completed checkpoint to then.
func measureStable(tb testing.TB) (pollFigures, time.Duration) {
	e := pollServer(tb, false)
	dir := tb.TempDir()
	jar := filepath.Join(dir, "job.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctrl := &Controller{Env: Env{Client: e.c, Clock: e.srv.Clock(), Jars: jarsOf(tb, jar)}, Store: &MemoryStore{}, Name: "app/counter",
		PollInterval: 30 * time.Second, RetryInterval: 20 * time.Second}
	spec := JobSpec{Job: JobTemplate{JarFile: jar, Args: []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "10000"}},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)}}
	start := e.srv.Clock().Now()
	var st JobStatus
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ctrl.Converge(ctx, spec, &st, func(*JobStatus) error { return nil }); err != nil {
		tb.Fatalf("Converge: %v (%+v)", err, st)
	}
	stableAt := e.srv.Clock().Now()
	reqs := e.srv.Requests()
	first := firstCheckpoint(tb, e, st.JobID)
	return pollFigures{requests: len(reqs), lags: []time.Duration{stableAt.Sub(first)}}, stableAt.Sub(start)
}

// firstCheckpoint is when the job's first checkpoint completed.
func firstCheckpoint(tb testing.TB, e *env, id flinkapi.JobID) time.Time {
	tb.Helper()
	e.srv.Clock().Advance(defaultCacheDuration) // past Flink's cache of the statistics
	stats, err := e.c.Checkpoints(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	first := time.Time{}
	for _, h := range stats.History {
		if h.Status == flinkapi.CheckpointCompleted && !h.IsSavepoint && (first.IsZero() || h.LatestAck.Before(first)) {
			first = h.LatestAck
		}
	}
	if first.IsZero() {
		tb.Fatalf("no completed checkpoint: %+v", stats)
	}
	return first
}

// sweepDurations are the savepoint durations of a sweep: 24 from 0.2 s to
// 30 s, each 1.25 times the one before.
func sweepDurations() []time.Duration {
	var ds []time.Duration
	for d := 200 * time.Millisecond; d <= 30*time.Second; d = d * 5 / 4 {
		ds = append(ds, d)
	}
	return ds
}

// measureSweep takes a savepoint of each of sweepDurations with measure:
// the requests are the mean, the lags those of every savepoint; ratio is
// the largest lag as a fraction of its savepoint's duration.
func measureSweep(tb testing.TB, measure func(tb testing.TB, d time.Duration) pollFigures) (f pollFigures, ratio float64) {
	ds := sweepDurations()
	for _, d := range ds {
		one := measure(tb, d)
		f.requests += one.requests
		f.lags = append(f.lags, one.lags...)
		ratio = max(ratio, float64(one.lags[0])/float64(d))
	}
	f.requests /= len(ds)
	return f, ratio
}

// BenchmarkPolls reports the requests an action sends on the fake
// (requests/op) and how late its waits see the change (lag-max-ms,
// lag-mean-ms). impl=flinkkit is the operation with the default Timing;
// impl=baseline is a hand-written client (net/http, encoding/json) that
// polls every second, the default Timing.Poll.
func BenchmarkPolls(b *testing.B) {
	cases := []struct {
		name     string
		flinkkit func(b *testing.B) pollFigures
		baseline func(b *testing.B) pollFigures
	}{
		{"start", func(b *testing.B) pollFigures { return measureStart(b, Timing{}) }, baselineStart},
		{"savepoint=1s", func(b *testing.B) pollFigures { return measureSavepoint(b, Timing{}, time.Second) },
			func(b *testing.B) pollFigures { return baselineSavepoint(b, time.Second) }},
		{"savepoint=10s", func(b *testing.B) pollFigures { return measureSavepoint(b, Timing{}, 10*time.Second) },
			func(b *testing.B) pollFigures { return baselineSavepoint(b, 10*time.Second) }},
		{"upgrade=10s", func(b *testing.B) pollFigures { return measureUpgrade(b, Timing{}, 10*time.Second, false) }, baselineUpgrade},
		{"upgrade=10s+report", func(b *testing.B) pollFigures { return measureUpgrade(b, Timing{}, 10*time.Second, true) }, baselineUpgrade},
	}
	for _, c := range cases {
		for _, impl := range []string{"flinkkit", "baseline"} {
			f := c.flinkkit
			if impl == "baseline" {
				f = c.baseline
			}
			b.Run("impl="+impl+"/case="+c.name, func(b *testing.B) {
				var got pollFigures
				for b.Loop() {
					got = f(b)
				}
				b.ReportMetric(float64(got.requests), "requests/op")
				b.ReportMetric(float64(got.maxLag().Milliseconds()), "lag-max-ms")
				b.ReportMetric(float64(got.meanLag().Milliseconds()), "lag-mean-ms")
			})
		}
	}
	for _, impl := range []string{"flinkkit", "baseline"} {
		b.Run("impl="+impl+"/case=savepoint-sweep", func(b *testing.B) {
			measure := func(tb testing.TB, d time.Duration) pollFigures { return measureSavepoint(tb, Timing{}, d) }
			if impl == "baseline" {
				measure = baselineSavepoint
			}
			var got pollFigures
			var ratio float64
			for b.Loop() {
				got, ratio = measureSweep(b, measure)
			}
			b.ReportMetric(float64(got.requests), "requests/op")
			b.ReportMetric(float64(got.maxLag().Milliseconds()), "lag-max-ms")
			b.ReportMetric(float64(got.meanLag().Milliseconds()), "lag-mean-ms")
			b.ReportMetric(100*ratio, "lag-max-%")
		})
	}
	for _, impl := range []string{"flinkkit", "baseline"} {
		b.Run("impl="+impl+"/case=stable", func(b *testing.B) {
			var got pollFigures
			var took time.Duration
			for b.Loop() {
				if impl == "flinkkit" {
					got, took = measureStable(b)
				} else {
					got, took = baselineStable(b)
				}
			}
			b.ReportMetric(float64(got.requests), "requests/op")
			b.ReportMetric(took.Seconds(), "stable-s")
			b.ReportMetric(float64(got.maxLag().Milliseconds()), "lag-max-ms")
		})
	}
}

// TestPollCounts measures the requests of the actions on the fake, logs
// them with the detection lag, and checks the bounds: an upgrade with a
// 10 s savepoint in 30 requests or fewer, the same with a progress
// callback, and a job waiting to become stable re-read before the
// Controller's whole poll interval has passed since its first checkpoint.
func TestPollCounts(t *testing.T) {
	log := func(name string, f pollFigures) {
		t.Logf("%-20s %3d requests, lag max %v mean %v", name, f.requests, f.maxLag(), f.meanLag())
	}
	log("start", measureStart(t, Timing{}))
	log("savepoint 1s", measureSavepoint(t, Timing{}, time.Second))
	log("savepoint 10s", measureSavepoint(t, Timing{}, 10*time.Second))
	up := measureUpgrade(t, Timing{}, 10*time.Second, false)
	log("upgrade 10s", up)
	withReport := measureUpgrade(t, Timing{}, 10*time.Second, true)
	log("upgrade 10s + report", withReport)
	if up.requests > 30 {
		t.Errorf("an upgrade with a 10 s savepoint sent %d requests, more than 30", up.requests)
	}
	if withReport.requests != up.requests {
		t.Errorf("the progress callback changed the requests of the upgrade from %d to %d", up.requests, withReport.requests)
	}
	sweep, ratio := measureSweep(t, func(tb testing.TB, d time.Duration) pollFigures { return measureSavepoint(tb, Timing{}, d) })
	log("savepoints 0.2-30s", sweep)
	t.Logf("largest lag: %.0f%% of the savepoint's duration", 100*ratio)
	for i, d := range sweepDurations() {
		// The poll before the change came at w <= d: the next one at
		// w+max(w*Lag, minPoll), or Poll later.
		if limit := min(max(time.Duration(float64(d)*defaultLag), minPoll), defaultPollInterval) + 10*time.Millisecond; sweep.lags[i] > limit {
			t.Errorf("a savepoint of %v was seen %v after it completed, more than %v", d, sweep.lags[i], limit)
		}
	}
	st, took := measureStable(t)
	log("stable", st)
	t.Logf("stable after %v", took)
	if lag := st.maxLag(); lag >= 30*time.Second {
		t.Errorf("the job was seen stable %v after its first checkpoint, a whole poll interval of the Controller", lag)
	}
}

// The baselines: what a user writes by hand with net/http and
// encoding/json, polling every second.

const baselinePoll = time.Second

func baselineDo(tb testing.TB, method, url string, body any, out any) {
	tb.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			tb.Fatal(err)
		}
	}
}

// baselineRun runs the jar and polls the job's status until RUNNING.
func baselineRun(tb testing.TB, e *env, args []string, from string) {
	var run struct {
		JobID string `json:"jobid"`
	}
	req := map[string]any{"programArgsList": args}
	if from != "" {
		req["savepointPath"] = from
	}
	baselineDo(tb, http.MethodPost, e.srv.URL+"/jars/"+string(e.jar)+"/run", req, &run)
	for {
		e.srv.Clock().Advance(baselinePoll)
		var st struct {
			Status string `json:"status"`
		}
		baselineDo(tb, http.MethodGet, e.srv.URL+"/jobs/"+run.JobID+"/status", nil, &st)
		if st.Status == "RUNNING" {
			return
		}
	}
}

// baselineWaitSavepoint polls a savepoint's trigger until it completes.
func baselineWaitSavepoint(tb testing.TB, e *env, trigger string) string {
	for {
		e.srv.Clock().Advance(baselinePoll)
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location string `json:"location"`
			} `json:"operation"`
		}
		baselineDo(tb, http.MethodGet, e.srv.URL+"/jobs/"+string(e.job)+"/savepoints/"+trigger, nil, &st)
		if st.Status.ID == "COMPLETED" {
			if st.Operation.Location == "" {
				tb.Fatal("the savepoint failed")
			}
			return st.Operation.Location
		}
	}
}

func baselineStart(b *testing.B) pollFigures {
	e := pollServer(b, false)
	baselineRun(b, e, counterArgs(), "")
	reqs := e.srv.Requests()
	running := firstOf(reqs, routeRun).Add(pollStart)
	return pollFigures{requests: len(reqs), lags: []time.Duration{lastOf(reqs, routeStatus, running).Sub(running)}}
}

func baselineSavepoint(b testing.TB, d time.Duration) pollFigures {
	e := pollServer(b, true, flinktest.WithSavepointDuration(d))
	var tr struct {
		RequestID string `json:"request-id"`
	}
	baselineDo(b, http.MethodPost, e.srv.URL+"/jobs/"+string(e.job)+"/savepoints", map[string]any{"cancel-job": false}, &tr)
	baselineWaitSavepoint(b, e, tr.RequestID)
	reqs := e.srv.Requests()
	done := firstOf(reqs, routeTrigger).Add(d)
	return pollFigures{requests: len(reqs), lags: []time.Duration{lastOf(reqs, routeTriggerState, done).Sub(done)}}
}

// baselineUpgrade stops the job with a savepoint and runs the new job
// from it.
func baselineUpgrade(b *testing.B) pollFigures {
	const d = 10 * time.Second
	e := pollServer(b, true, flinktest.WithSavepointDuration(d))
	var tr struct {
		RequestID string `json:"request-id"`
	}
	baselineDo(b, http.MethodPost, e.srv.URL+"/jobs/"+string(e.job)+"/stop", map[string]any{"drain": false}, &tr)
	loc := baselineWaitSavepoint(b, e, tr.RequestID)
	baselineRun(b, e, newArgs(), loc)
	reqs := e.srv.Requests()
	stopped := firstOf(reqs, routeStop).Add(d)
	running := firstOf(reqs, routeRun).Add(pollStart)
	return pollFigures{requests: len(reqs), lags: []time.Duration{
		lastOf(reqs, routeTriggerState, stopped).Sub(stopped), lastOf(reqs, routeStatus, running).Sub(running)}}
}

// baselineStable runs a job and reads its checkpoint statistics every
// 30 s until one completed.
func baselineStable(b *testing.B) (pollFigures, time.Duration) {
	e := pollServer(b, false)
	start := e.srv.Clock().Now()
	var run struct {
		JobID string `json:"jobid"`
	}
	baselineDo(b, http.MethodPost, e.srv.URL+"/jars/"+string(e.jar)+"/run",
		map[string]any{"programArgsList": []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "10000"}}, &run)
	for {
		e.srv.Clock().Advance(30 * time.Second)
		var stats struct {
			Latest struct {
				Completed *struct {
					LatestAck int64 `json:"latest_ack_timestamp"`
				} `json:"completed"`
			} `json:"latest"`
		}
		baselineDo(b, http.MethodGet, e.srv.URL+"/jobs/"+run.JobID+"/checkpoints", nil, &stats)
		if stats.Latest.Completed != nil {
			now := e.srv.Clock().Now()
			n := len(e.srv.Requests())
			first := firstCheckpoint(b, e, flinkapi.JobID(run.JobID))
			return pollFigures{requests: n, lags: []time.Duration{now.Sub(first)}}, now.Sub(start)
		}
	}
}
