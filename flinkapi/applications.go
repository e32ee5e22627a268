package flinkapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// ApplicationID identifies a Flink application (Flink 2.3+): 32 lower-case
// hexadecimal characters, as Flink prints it. An application is a program
// run by the JobManager (its main method), with the jobs it submits. On
// Flink 2.3 every jar run is one: POST /jars/:jarid/run starts an
// application whose id is the job's id, named "SingleJobApplication(<job
// name>)". The zero value means "no application".
type ApplicationID string

// NewApplicationID returns a random application id. Submitting with an id
// chosen by the caller makes a retried submission detectable (see
// RunJarApplication).
func NewApplicationID() ApplicationID { return ApplicationID(randomHex()) }

// ParseApplicationID checks that s is an application id (32 hexadecimal
// characters) and returns it in Flink's lower-case form.
func ParseApplicationID(s string) (ApplicationID, error) {
	if err := checkHex32("application id", s); err != nil {
		return "", err
	}
	return ApplicationID(strings.ToLower(s)), nil
}

// Validate reports whether id is a well-formed application id.
func (id ApplicationID) Validate() error { return checkHex32("application id", string(id)) }

// ApplicationState is the state of an application, Flink's
// ApplicationState.
type ApplicationState string

// The states of an application (Flink 2.3).
const (
	ApplicationCreated   ApplicationState = "CREATED"
	ApplicationRunning   ApplicationState = "RUNNING"
	ApplicationFailing   ApplicationState = "FAILING"
	ApplicationFailed    ApplicationState = "FAILED"
	ApplicationCanceling ApplicationState = "CANCELING"
	ApplicationCanceled  ApplicationState = "CANCELED"
	ApplicationFinished  ApplicationState = "FINISHED"
)

// IsTerminal reports whether the application has ended: FINISHED, FAILED or
// CANCELED.
func (s ApplicationState) IsTerminal() bool {
	return s == ApplicationFinished || s == ApplicationFailed || s == ApplicationCanceled
}

// ApplicationOverview is one entry of GET /applications/overview.
type ApplicationOverview struct {
	ID        ApplicationID
	Name      string // the entry class, or "SingleJobApplication(<job name>)" for a jar run
	Status    ApplicationState
	StartTime time.Time
	EndTime   time.Time // zero while running
	Duration  time.Duration
	// Jobs counts the application's jobs per state ("RUNNING": 1).
	Jobs map[JobState]int
}

// ApplicationDetails is the answer of GET /applications/:applicationid.
type ApplicationDetails struct {
	ID        ApplicationID
	Name      string
	Status    ApplicationState
	StartTime time.Time
	EndTime   time.Time // zero while running
	Duration  time.Duration
	// Timestamps says when the application entered each state; states it
	// never entered are absent.
	Timestamps map[ApplicationState]time.Time
	// Jobs are the application's jobs, as GET /jobs/overview gives them.
	Jobs []JobOverview
}

type applicationsOverviewWire struct {
	Applications []applicationOverviewWire `json:"applications"`
}

type applicationOverviewWire struct {
	ID        ApplicationID    `json:"id"`
	Name      string           `json:"name"`
	Status    ApplicationState `json:"status"`
	StartTime int64            `json:"start-time"`
	EndTime   int64            `json:"end-time"`
	Duration  int64            `json:"duration"`
	Jobs      map[string]int   `json:"jobs"`
}

type applicationDetailsWire struct {
	ID         ApplicationID     `json:"id"`
	Name       string            `json:"name"`
	Status     ApplicationState  `json:"status"`
	StartTime  int64             `json:"start-time"`
	EndTime    int64             `json:"end-time"`
	Duration   int64             `json:"duration"`
	Timestamps map[string]int64  `json:"timestamps"`
	Jobs       []jobOverviewWire `json:"jobs"`
}

// Applications lists the applications the JobManager knows, running and
// ended, with their jobs counted per state. Clusters older than Flink 2.3
// have no applications: they answer ErrUnsupported, with nothing sent.
//
// Flink REST: GET /applications/overview (2.3+)
func (c *Client) Applications(ctx context.Context) ([]ApplicationOverview, error) {
	if _, err := c.requireFeature(ctx, FeatureApplications); err != nil {
		return nil, err
	}
	var w applicationsOverviewWire
	if err := c.get(ctx, "/applications/overview", nil, &w); err != nil {
		return nil, err
	}
	out := make([]ApplicationOverview, len(w.Applications))
	for i, a := range w.Applications {
		out[i] = ApplicationOverview{
			ID: a.ID, Name: a.Name, Status: a.Status,
			StartTime: FromMillis(a.StartTime), EndTime: FromMillis(a.EndTime), Duration: DurationFromMillis(a.Duration),
		}
		if len(a.Jobs) > 0 {
			out[i].Jobs = make(map[JobState]int, len(a.Jobs))
			for k, n := range a.Jobs {
				out[i].Jobs[JobState(k)] = n
			}
		}
	}
	return out, nil
}

// Application returns one application and its jobs. An application the
// JobManager does not know answers an error for which
// IsApplicationNotFound is true (Flink answers 500 with its
// FlinkApplicationNotFoundException). Clusters older than Flink 2.3 answer
// ErrUnsupported, with nothing sent.
//
// Flink REST: GET /applications/:applicationid (2.3+)
func (c *Client) Application(ctx context.Context, id ApplicationID) (*ApplicationDetails, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if _, err := c.requireFeature(ctx, FeatureApplications); err != nil {
		return nil, err
	}
	var w applicationDetailsWire
	if err := c.get(ctx, "/applications/"+string(id), nil, &w); err != nil {
		return nil, err
	}
	d := &ApplicationDetails{
		ID: w.ID, Name: w.Name, Status: w.Status,
		StartTime: FromMillis(w.StartTime), EndTime: FromMillis(w.EndTime), Duration: DurationFromMillis(w.Duration),
		Jobs: make([]JobOverview, len(w.Jobs)),
	}
	for k, ms := range w.Timestamps {
		if ms > 0 {
			if d.Timestamps == nil {
				d.Timestamps = map[ApplicationState]time.Time{}
			}
			d.Timestamps[ApplicationState(k)] = FromMillis(ms)
		}
	}
	for i := range w.Jobs {
		d.Jobs[i] = w.Jobs[i].convert()
	}
	return d, nil
}

// CancelApplication asks the JobManager to cancel a running application
// and its jobs, and returns once Flink accepted (202); the application
// reaches CANCELED later (poll Application). Flink answers 404 "Application
// could not be found." both for an application it does not know and for
// one that has already ended; IsApplicationNotFound is true for either. It
// is not retried. Clusters older than Flink 2.3 answer ErrUnsupported, with
// nothing sent.
//
// Cancelling discards the state of the application's jobs unless a
// savepoint or retained checkpoint was taken first.
//
// Flink REST: POST /applications/:applicationid/cancel (2.3+)
func (c *Client) CancelApplication(ctx context.Context, id ApplicationID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if _, err := c.requireFeature(ctx, FeatureApplications); err != nil {
		return err
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/applications/" + string(id) + "/cancel"}, nil)
	return err
}

// RunApplicationRequest describes an application to start from an uploaded
// jar: the fields of a jar run, and the application's id.
type RunApplicationRequest struct {
	RunJarRequest
	// ApplicationID is the id the new application gets; empty lets Flink
	// choose. Choose it (NewApplicationID) and record it before calling:
	// after an error, look the application up with this id before
	// submitting again. RunJarRequest.JobID, if set, is the id of the job
	// the program submits (for a program that submits one).
	ApplicationID ApplicationID
}

type runApplicationWire struct {
	runJarWire
	ApplicationID ApplicationID `json:"applicationId,omitempty"`
}

type runApplicationResponseWire struct {
	ApplicationID ApplicationID `json:"applicationid"`
}

// RunJarApplication starts an application from an uploaded jar and returns
// its id. Unlike RunJar it does not wait for the program to submit its
// job: Flink answers 202 once the application is created, and the
// program's jobs appear in Application's answer as the program submits
// them. A program whose entry class is missing still fails the call
// (IsProgramError). An application id already in use answers an error for
// which IsDuplicateJob is true. It is never retried. Clusters older than
// Flink 2.3 answer ErrUnsupported, with nothing sent.
//
// Flink REST: POST /jars/:jarid/run-application (2.3+)
func (c *Client) RunJarApplication(ctx context.Context, jar JarID, req RunApplicationRequest) (ApplicationID, error) {
	if err := jar.Validate(); err != nil {
		return "", err
	}
	if req.ApplicationID != "" {
		if err := req.ApplicationID.Validate(); err != nil {
			return "", err
		}
	}
	v, err := c.requireFeature(ctx, FeatureApplications)
	if err != nil {
		return "", err
	}
	body, err := buildRunJar(v, req.RunJarRequest)
	if err != nil {
		return "", err
	}
	w := &runApplicationWire{runJarWire: *body, ApplicationID: ApplicationID(strings.ToLower(string(req.ApplicationID)))}
	var out runApplicationResponseWire
	p := "/jars/" + string(jar) + "/run-application"
	if _, err := c.do(ctx, call{method: http.MethodPost, path: p, body: w, secrets: req.Secrets}, &out); err != nil {
		return "", err
	}
	if err := out.ApplicationID.Validate(); err != nil {
		return "", c.decodeError(http.MethodPost, p, errors.New("no usable application id: "+inputMessage(err)))
	}
	return out.ApplicationID, nil
}

// IsApplicationNotFound reports whether err is Flink's answer that it does
// not know the application: the 404 "Application could not be found." of
// the cancellation (also for an application that has already ended), or
// the 500 carrying FlinkApplicationNotFoundException ("Could not find Flink
// application (<id>)") of the details.
func IsApplicationNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Path, "/applications/") {
		return false
	}
	switch ae.StatusCode {
	case http.StatusNotFound, http.StatusInternalServerError:
		if ae.StatusCode == http.StatusNotFound && isUnknownRoute(ae) {
			return false
		}
		for _, m := range append(ae.Errors[:len(ae.Errors):len(ae.Errors)], ae.StackTrace) {
			if containsFold(m, "could not find flink application") || containsFold(m, "application could not be found") ||
				containsFold(m, "flinkapplicationnotfoundexception") {
				return true
			}
		}
	}
	return false
}
