package flinktest_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestCluster: config, overview and task managers describe the cluster.
func TestCluster(t *testing.T) {
	f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithSlots(3))
	cfg, err := f.c.Config(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &flinkapi.DashboardConfig{
		FlinkVersion: "2.3.0", FlinkRevision: "c0f8d1a @ 2026-06-08T09:21:06+02:00", RefreshInterval: 3000,
		TimezoneName: "Coordinated Universal Time", Features: flinkapi.WebUIFeatures{WebSubmit: true, WebCancel: true},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	f.running(flinkapi.RunJarRequest{})
	ov, err := f.c.Overview(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantOv := &flinkapi.ClusterOverview{TaskManagers: 1, SlotsTotal: 3, SlotsAvailable: 2, JobsRunning: 1, FlinkVersion: "2.3.0", FlinkCommit: "c0f8d1a"}
	if diff := cmp.Diff(wantOv, ov); diff != "" {
		t.Errorf("Overview (-want +got):\n%s", diff)
	}
	tms, err := f.c.TaskManagers(f.ctx)
	if err != nil || len(tms) != 1 || tms[0].SlotsNumber != 3 || tms[0].FreeSlots != 2 || !tms[0].LastHeartbeat.Equal(f.srv.Clock().Now()) {
		t.Errorf("TaskManagers %+v, %v", tms, err)
	}

	none := newFake(t, flinktest.WithSlots(0))
	if tms, err := none.c.TaskManagers(none.ctx); err != nil || len(tms) != 0 {
		t.Errorf("no slots: %+v, %v", tms, err)
	}
}

// TestShutdown: DELETE /cluster answers, then the server refuses.
func TestShutdown(t *testing.T) {
	f := newFake(t)
	if err := f.c.ShutdownCluster(f.ctx); err != nil {
		t.Fatal(err)
	}
	var te *flinkapi.TransportError
	if _, err := f.c.Overview(f.ctx); !errorsAs(err, &te) {
		t.Errorf("after the shutdown: %v, want a transport error", err)
	}
}

// TestRequestLog: the log records each request with its route and status.
func TestRequestLog(t *testing.T) {
	f := newFake(t)
	f.raw(http.MethodGet, "/config?x=1", "")
	f.raw(http.MethodPost, "/jobs/0123456789abcdef0123456789abcdef/savepoints", `{"cancel-job":false}`)
	f.raw(http.MethodGet, "/nowhere", "")
	type entry struct{ Method, Path, Query, Body, Route string }
	var got []entry
	for _, r := range f.srv.Requests() {
		if !r.Time.Equal(f.srv.Clock().Now()) {
			t.Errorf("time %v, want the clock's %v", r.Time, f.srv.Clock().Now())
		}
		got = append(got, entry{r.Method, r.Path, r.Query, r.Body, r.Route + " " + http.StatusText(r.Status)})
	}
	want := []entry{
		{"GET", "/config", "x=1", "", "GET /config OK"},
		{"POST", "/jobs/0123456789abcdef0123456789abcdef/savepoints", "", `{"cancel-job":false}`, "POST /jobs/:jobid/savepoints Accepted"},
		{"GET", "/nowhere", "", "", " Not Found"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	all := f.srv.Requests()
	if n := f.srv.RequestCount(); n != len(all) {
		t.Errorf("RequestCount %d, %d requests logged", n, len(all))
	}
	for n := range len(all) + 2 {
		since := f.srv.RequestsSince(n)
		if want := all[min(n, len(all)):]; len(since) != len(want) || (len(want) > 0 && since[0].Path != want[0].Path) {
			t.Errorf("RequestsSince(%d): %d requests, want %d", n, len(since), len(want))
		}
	}
	f.srv.ClearRequests()
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("%d requests after ClearRequests", n)
	}
	if n, since := f.srv.RequestCount(), f.srv.RequestsSince(1); n != 0 || since != nil {
		t.Errorf("after ClearRequests: RequestCount %d, RequestsSince(1) %v", n, since)
	}
}

// TestDeterministic: the same seed and the same requests give the same
// answers.
func TestDeterministic(t *testing.T) {
	script := func(seed int64) []string {
		f := newFake(t, flinktest.WithSeed(seed))
		var out []string
		jar := f.upload()
		status, body := f.raw(http.MethodPost, "/jars/"+string(jar)+"/run", `{"programArgsList":["--out","/o"]}`)
		out = append(out, string(jar), http.StatusText(status), string(body))
		f.advance(2 * time.Second)
		for _, r := range f.srv.Jobs() {
			_, b := f.raw(http.MethodPost, "/jobs/"+string(r.ID)+"/savepoints", "{}")
			out = append(out, string(b))
			f.advance(time.Second)
			_, b = f.raw(http.MethodGet, "/jobs/"+string(r.ID)+"/checkpoints", "")
			out = append(out, string(b))
		}
		return out
	}
	a, b, c := script(3), script(3), script(4)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different answers:\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Error("different seeds, same answers")
	}
}

// TestConcurrentClients: the server serves many clients at once (run with
// -race).
func TestConcurrentClients(t *testing.T) {
	f := newFake(t, flinktest.WithAutoAdvance(10*time.Millisecond))
	jar := f.upload()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := flinkapi.NewClient(f.srv.URL)
			id, err := c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/"+itoa(i), 100)})
			if err != nil {
				t.Error(err)
				return
			}
			for range 20 {
				if _, err := c.Checkpoints(f.ctx, id); err != nil {
					t.Error(err)
				}
				f.srv.Clock().Advance(50 * time.Millisecond)
				f.srv.ReadCounts("/out/" + itoa(i))
			}
		}()
	}
	wg.Wait()
	if n := len(f.srv.Jobs()); n != 8 {
		t.Errorf("%d jobs, want 8", n)
	}
}

// TestClock: a manual clock moves only when told; Sleep advances it; a
// wall clock follows real time.
func TestClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := flinktest.NewClock(start)
	c.Advance(time.Minute)
	c.Advance(-time.Hour)
	if err := c.Sleep(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(start.Add(61 * time.Second)) {
		t.Errorf("Now %v, want %v", got, start.Add(61*time.Second))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Second); err == nil {
		t.Error("Sleep with a cancelled context: no error")
	}
}

// TestRealTime: with WithRealTime the server's clock is the wall clock,
// which Advance still moves ahead.
func TestRealTime(t *testing.T) {
	f := newFake(t, flinktest.WithRealTime())
	if d := time.Since(f.srv.Clock().Now()); d < -time.Second || d > time.Second {
		t.Errorf("clock is %v off the wall clock", d)
	}
	id := f.run(flinkapi.RunJarRequest{})
	f.advance(time.Second) // jumps ahead instead of waiting
	if st := f.state(id); st != flinkapi.JobRunning {
		t.Errorf("job %s, want RUNNING", st)
	}
	start := time.Now()
	if err := f.srv.Clock().Sleep(f.ctx, 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Errorf("wall clock Sleep returned after %v, %v", time.Since(start), err)
	}
}

// TestOptions: invalid options panic with a message.
func TestOptions(t *testing.T) {
	for _, opt := range []flinktest.Option{
		flinktest.WithVersion("1.14.6"),
		flinktest.WithVersion("3.0.0"),
		flinktest.WithVersion("x"),
		flinktest.WithClock(nil),
		flinktest.WithSavepointDuration(-1),
		flinktest.WithCheckpointInterval(time.Millisecond),
		flinktest.WithStoreDuration(0),
		flinktest.WithRefreshInterval(-1),
		flinktest.WithAutoAdvance(-1),
		flinktest.WithSlots(-1),
		flinktest.WithSavepointDir("relative"),
		flinktest.WithCheckpointDir(""),
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "flinktest: With") {
					t.Errorf("option did not panic with a message: %v", r)
				}
			}()
			srv := flinktest.NewServer(opt)
			srv.Close()
		}()
	}
}
