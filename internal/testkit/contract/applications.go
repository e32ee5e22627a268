package contract

import (
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// countingTransport counts the requests sent through it.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// applicationsRefused checks, on a cluster older than Flink 2.3, that every
// application call fails with ErrUnsupported and sends nothing: a client
// that knows the version (WithFlinkVersion) makes no request at all.
func (s *suite) applicationsRefused(t *testing.T) {
	ctx := s.ctx(t)
	ct := &countingTransport{next: http.DefaultTransport}
	c, err := flinkapi.NewClient(s.tg.URL, flinkapi.WithHTTPClient(&http.Client{Transport: ct}), flinkapi.WithFlinkVersion(s.v.String()))
	if err != nil {
		t.Fatal(err)
	}
	id := flinkapi.NewApplicationID()
	jar := s.jar
	if jar == "" {
		jar = "missing.jar"
	}
	calls := map[string]error{}
	_, calls["Applications"] = c.Applications(ctx)
	_, calls["Application"] = c.Application(ctx, id)
	calls["CancelApplication"] = c.CancelApplication(ctx, id)
	_, calls["RunJarApplication"] = c.RunJarApplication(ctx, jar, flinkapi.RunApplicationRequest{
		RunJarRequest: flinkapi.RunJarRequest{EntryClass: s.tg.EntryClass}, ApplicationID: id,
	})
	for name, err := range calls {
		var ue *flinkapi.UnsupportedError
		switch {
		case !errors.Is(err, flinkapi.ErrUnsupported):
			t.Errorf("%s on Flink %s: %v, want ErrUnsupported", name, s.v, err)
		case !errors.As(err, &ue) || ue.Feature != flinkapi.FeatureApplications || ue.Since != (flinkapi.Version{Major: 2, Minor: 3}):
			t.Errorf("%s on Flink %s: %#v, want an UnsupportedError for FeatureApplications since 2.3", name, s.v, err)
		}
	}
	if n := ct.n.Load(); n != 0 {
		t.Errorf("the refused calls sent %d requests, want none", n)
	}
	// The client that asks the cluster for its version refuses too.
	if _, err := s.c.Applications(ctx); !errors.Is(err, flinkapi.ErrUnsupported) {
		t.Errorf("Applications with the version asked of the cluster: %v, want ErrUnsupported", err)
	}
}

// applications: on Flink 2.3 the main job's jar run is an application of
// its own, whose id is the job's (its details' application-id):
// Applications lists it RUNNING with one
// RUNNING job, Application gives its details and the job; an unknown
// application answers IsApplicationNotFound to both Application and
// CancelApplication. Before 2.3 every application call is refused without
// a request.
func (s *suite) applications(t *testing.T) {
	if !s.v.AtLeast(2, 3) {
		s.applicationsRefused(t)
		return
	}
	s.needMain(t)
	ctx := s.ctx(t)
	appID := flinkapi.ApplicationID(s.main.id)
	wantName := "SingleJobApplication(" + mainSpec.name + ")"

	apps, err := s.c.Applications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(apps, func(a flinkapi.ApplicationOverview) bool { return a.ID == appID })
	if i < 0 {
		t.Fatalf("no application %s (the main job's id) in %+v", appID, apps)
	}
	a := apps[i]
	if a.Name != wantName || a.Status != flinkapi.ApplicationRunning {
		t.Errorf("application %s: name %q, status %s; want %q, RUNNING", a.ID, a.Name, a.Status, wantName)
	}
	if len(a.Jobs) != 1 || a.Jobs[flinkapi.JobRunning] != 1 {
		t.Errorf("application %s: jobs %v, want one RUNNING", a.ID, a.Jobs)
	}
	s.checkTime(t, "start-time", a.StartTime, s.main.submitted)
	if !a.EndTime.IsZero() || a.Duration <= 0 {
		t.Errorf("end-time %v, duration %v of a running application: want zero, > 0", a.EndTime, a.Duration)
	}

	d, err := s.c.Application(ctx, appID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != appID || d.Name != wantName || d.Status != flinkapi.ApplicationRunning {
		t.Errorf("details: id %s, name %q, status %s; want %s, %q, RUNNING", d.ID, d.Name, d.Status, appID, wantName)
	}
	s.checkTime(t, "start-time", d.StartTime, s.main.submitted)
	s.checkTime(t, "timestamps[CREATED]", d.Timestamps[flinkapi.ApplicationCreated], s.main.submitted)
	s.checkTime(t, "timestamps[RUNNING]", d.Timestamps[flinkapi.ApplicationRunning], s.main.submitted)
	if _, ok := d.Timestamps[flinkapi.ApplicationCanceled]; ok {
		t.Errorf("timestamps %v of a running application hold CANCELED", d.Timestamps)
	}
	if len(d.Jobs) != 1 {
		t.Fatalf("details: %d jobs, want 1: %+v", len(d.Jobs), d.Jobs)
	}
	if j := d.Jobs[0]; j.ID != s.main.id || j.Name != mainSpec.name || j.State != flinkapi.JobRunning || j.JobType != "STREAMING" {
		t.Errorf("details job: id %s, name %q, state %s, type %q; want %s, %q, RUNNING, STREAMING", j.ID, j.Name, j.State, j.JobType, s.main.id, mainSpec.name)
	}

	if jd, err := s.c.Job(ctx, s.main.id); err != nil {
		t.Errorf("job details of %s: %v", s.main.id, err)
	} else if jd.ApplicationID != appID {
		t.Errorf("job details of %s: application-id %q, want %s", s.main.id, jd.ApplicationID, appID)
	}

	unknown := flinkapi.NewApplicationID()
	if _, err := s.c.Application(ctx, unknown); !flinkapi.IsApplicationNotFound(err) {
		t.Errorf("Application(unknown): %v, want IsApplicationNotFound", err)
	}
	if err := s.c.CancelApplication(ctx, unknown); !flinkapi.IsApplicationNotFound(err) {
		t.Errorf("CancelApplication(unknown): %v, want IsApplicationNotFound", err)
	}
	if _, err := s.c.Application(ctx, "0123"); !errors.Is(err, flinkapi.ErrInvalidInput) {
		t.Errorf("Application(malformed id): %v, want ErrInvalidInput", err)
	}
}

// runJarApplication: on Flink 2.3 RunJarApplication starts the test job as
// an application with the id the client chose (and the job with its
// chosen id), answering before the job runs; the application shows the
// job RUNNING, whose details name the application; a second submission with the same application id is
// refused (IsDuplicateJob); CancelApplication ends the application
// CANCELED with its job, and a second cancellation answers
// IsApplicationNotFound. Before 2.3 it is refused without a request.
func (s *suite) runJarApplication(t *testing.T) {
	if !s.v.AtLeast(2, 3) {
		s.applicationsRefused(t)
		return
	}
	s.needJar(t)
	ctx := s.ctx(t)
	spec := jobSpec{name: "contract-application", keys: 2, rate: 20}
	jobID := flinkapi.NewJobID()
	appID := flinkapi.NewApplicationID()
	out := s.tg.OutDir(spec.name)
	req := flinkapi.RunApplicationRequest{
		RunJarRequest: flinkapi.RunJarRequest{EntryClass: s.tg.EntryClass, ProgramArgs: spec.args(out), JobID: jobID},
		ApplicationID: appID,
	}
	submitted := s.tg.Now()
	got, err := s.c.RunJarApplication(ctx, s.jar, req)
	s.cancelAtEnd(t, s.c, jobID)
	if err != nil {
		t.Fatalf("RunJarApplication: %v", err)
	}
	if got != appID {
		t.Fatalf("RunJarApplication answered application id %s, want the client-chosen %s", got, appID)
	}

	var d *flinkapi.ApplicationDetails
	s.waitFor(t, ctx, "the application's job to run", func() (bool, string) {
		d, err = s.c.Application(ctx, appID)
		if err != nil {
			return false, err.Error()
		}
		if len(d.Jobs) != 1 {
			return false, string(d.Status) + ", no job yet"
		}
		return d.Status == flinkapi.ApplicationRunning && d.Jobs[0].State == flinkapi.JobRunning, string(d.Status) + ", job " + string(d.Jobs[0].State)
	})
	if d.Name != s.tg.EntryClass {
		t.Errorf("application name %q, want the entry class %q", d.Name, s.tg.EntryClass)
	}
	if d.Jobs[0].ID != jobID {
		t.Errorf("the application's job is %s, want the client-chosen %s", d.Jobs[0].ID, jobID)
	}
	if jd, err := s.c.Job(ctx, jobID); err != nil {
		t.Errorf("job details of %s: %v", jobID, err)
	} else if jd.ApplicationID != appID {
		t.Errorf("job details of %s: application-id %q, want the application's %s", jobID, jd.ApplicationID, appID)
	}
	s.checkTime(t, "start-time", d.StartTime, submitted)

	if _, err := s.c.RunJarApplication(ctx, s.jar, req); !flinkapi.IsDuplicateJob(err) {
		t.Errorf("RunJarApplication with the application id in use: %v, want IsDuplicateJob", err)
	}

	if err := s.c.CancelApplication(ctx, appID); err != nil {
		t.Fatalf("CancelApplication: %v", err)
	}
	s.waitFor(t, ctx, "the application to end CANCELED", func() (bool, string) {
		d, err = s.c.Application(ctx, appID)
		if err != nil {
			return false, err.Error()
		}
		return d.Status.IsTerminal(), string(d.Status)
	})
	if d.Status != flinkapi.ApplicationCanceled {
		t.Fatalf("application ended %s, want CANCELED", d.Status)
	}
	if len(d.Jobs) != 1 || d.Jobs[0].State != flinkapi.JobCanceled {
		t.Errorf("jobs %+v of the cancelled application, want one CANCELED", d.Jobs)
	}
	s.checkTime(t, "end-time", d.EndTime, submitted)
	s.checkTime(t, "timestamps[CANCELED]", d.Timestamps[flinkapi.ApplicationCanceled], submitted)
	if !d.EndTime.IsZero() && d.EndTime.Before(d.StartTime) {
		t.Errorf("end-time %v before start-time %v", d.EndTime, d.StartTime)
	}
	if err := s.c.CancelApplication(ctx, appID); !flinkapi.IsApplicationNotFound(err) {
		t.Errorf("CancelApplication of the ended application: %v, want IsApplicationNotFound", err)
	}

	apps, err := s.c.Applications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(apps, func(a flinkapi.ApplicationOverview) bool { return a.ID == appID })
	if i < 0 {
		t.Fatalf("no application %s in %+v", appID, apps)
	}
	if a := apps[i]; a.Status != flinkapi.ApplicationCanceled || a.Jobs[flinkapi.JobCanceled] != 1 || a.EndTime.IsZero() {
		t.Errorf("overview of the cancelled application: %+v, want CANCELED, one CANCELED job, an end-time", a)
	}
}
