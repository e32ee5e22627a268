package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// DesiredState is the state a JobSpec asks its job to be in. The strings
// are stable.
type DesiredState string

// Desired states.
const (
	// DesiredRunning: the job runs (the default).
	DesiredRunning DesiredState = "Running"
	// DesiredSuspended: the job is stopped with a savepoint, which the
	// status keeps; Running again resumes it from there.
	DesiredSuspended DesiredState = "Suspended"
)

// JobTemplate is what a job runs: its jar and arguments. A change of it
// is an upgrade; a change of Parallelism alone, a rescale.
type JobTemplate struct {
	// JarFile is the path of the job's jar on the caller's file system.
	// It is uploaded once and run from there; another path is uploaded
	// again. Ignored when JarID is set or the Controller has a Deployer.
	JarFile string `json:"jarFile,omitempty"`
	// JarID is a jar already uploaded to the session cluster. It is part
	// of the template: a caller that uploads the jar again (under a new
	// id) and names the new id changes the template, which upgrades the
	// job. Prefer JarFile, which the controller uploads once per path.
	JarID flinkapi.JarID `json:"jarID,omitempty"`
	// EntryClass overrides the jar manifest's main class.
	EntryClass string `json:"entryClass,omitempty"`
	// Args are the program arguments, one per element.
	Args []string `json:"args,omitempty"`
	// Parallelism of the job; 0 keeps the cluster's default.
	// +kubebuilder:validation:Minimum=0
	Parallelism int `json:"parallelism,omitempty"`
	// FlinkConfiguration holds job configuration entries (Flink 1.17+),
	// such as execution.checkpointing.externalized-checkpoint-retention:
	// RETAIN_ON_CANCELLATION, which makes checkpoints restore points.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
	// JarDigest is the SHA-256 of JarFile's content, which the Controller
	// fills in when it reads the spec: a jar rebuilt under the same path
	// is a new template, uploaded again and upgraded to. Leave it empty
	// in a spec; a template without one is compared without it.
	JarDigest string `json:"jarDigest,omitempty"`
}

// IsZero reports whether t names no job.
func (t JobTemplate) IsZero() bool {
	return t.JarFile == "" && t.JarDigest == "" && t.JarID == "" && t.EntryClass == "" && len(t.Args) == 0 && t.Parallelism == 0 && len(t.FlinkConfiguration) == 0
}

// Fingerprint is a short stable digest of t: equal templates have equal
// fingerprints (the order of FlinkConfiguration does not count). It
// leaves JarDigest out: a fingerprint names the template as the spec
// writes it.
func (t JobTemplate) Fingerprint() string {
	if t.IsZero() {
		return ""
	}
	t.JarDigest = ""
	b, _ := json.Marshal(t) // maps marshal in key order
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// equal reports whether t and u run the same job: the same template, and
// the same jar content where both know it.
func (t JobTemplate) equal(u JobTemplate) bool {
	return t.sameAs(u) && (t.JarDigest == u.JarDigest || t.JarDigest == "" || u.JarDigest == "")
}

// sameAs reports whether t and u have equal fingerprints, field by field
// (a nil and an empty Args or FlinkConfiguration are the same, as in
// their JSON), without encoding either: the Controller compares
// templates several times per call.
func (t JobTemplate) sameAs(u JobTemplate) bool {
	return t.JarFile == u.JarFile && t.JarID == u.JarID && t.EntryClass == u.EntryClass && t.Parallelism == u.Parallelism &&
		slices.Equal(t.Args, u.Args) && sameConfig(t.FlinkConfiguration, u.FlinkConfiguration)
}

// sameConfig reports whether a and b hold the same entries: at once when
// they are the same map, as a spec's and its status's are once the
// Controller found them equal (withDigest).
func sameConfig(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	return maps.Equal(a, b)
}

// onlyParallelism reports whether t and u differ in their parallelism
// alone.
func (t JobTemplate) onlyParallelism(u JobTemplate) bool {
	t.Parallelism = u.Parallelism
	return t.equal(u) && !u.IsZero()
}

func (t JobTemplate) run() flinkapi.RunJarRequest {
	return flinkapi.RunJarRequest{EntryClass: t.EntryClass, ProgramArgs: slices.Clone(t.Args), Parallelism: t.Parallelism,
		FlinkConfiguration: maps.Clone(t.FlinkConfiguration)}
}

// RollbackPolicy says whether an upgraded job that does not become stable
// goes back to the last stable template.
type RollbackPolicy struct {
	// Enabled turns rollbacks on; off by default.
	Enabled bool `json:"enabled,omitempty"`
	// ReadinessTimeout is how long an upgraded job has to become stable:
	// RUNNING with all its tasks running and a checkpoint completed after
	// its start. Default: DefaultReadinessTimeout.
	ReadinessTimeout policy.Duration `json:"readinessTimeout,omitzero"`
}

// DefaultReadinessTimeout is RollbackPolicy.ReadinessTimeout's default.
const DefaultReadinessTimeout = 5 * time.Minute

// BlueGreenPolicy, if enabled, makes a change of the spec's job a
// blue/green upgrade (the BlueGreen operation): a savepoint of the running
// job without stopping it, the new job started from it beside the old one,
// and the old job stopped only once the new one is healthy. A new job that
// fails or is not healthy within Window is cancelled and the old one runs
// on, untouched: the spec is then not tried again until it changes
// (Reason BlueGreenAborted). During the overlap both jobs emit output
// (sinks must be idempotent or transactional), and the new job reprocesses
// what the old one processed since the savepoint. On a session cluster it
// needs free slots for the new job beside the old one; with a Deployer the
// new job runs in a second cluster, and the old cluster is deleted once
// the old job is stopped.
type BlueGreenPolicy struct {
	// Enabled turns blue/green upgrades on; off by default.
	Enabled bool `json:"enabled,omitempty"`
	// Window bounds the time from the new job running until it is
	// healthy; default DefaultBlueGreenWindow.
	Window policy.Duration `json:"window,omitzero"`
	// KeepSavepoint stops the old job with a savepoint, a fallback
	// restore point, instead of cancelling it.
	KeepSavepoint bool `json:"keepSavepoint,omitempty"`
	// Canary makes the blue/green upgrade a restore canary (the Canary
	// operation): the new job runs beside the old one only until it has
	// restored the savepoint and is healthy, then it is cancelled and the
	// job is upgraded as UpdatePolicy says (stop with savepoint, start
	// from it): a proof with no downtime that the new version accepts the
	// state, without the overlap's output. A canary that fails leaves the
	// old job untouched, and the spec is not tried again until it changes
	// (Reason CanaryFailed). Needs Enabled; with a Deployer (no session
	// cluster to run a canary beside the job) the change runs as a
	// blue/green upgrade instead.
	Canary bool `json:"canary,omitempty"`
}

// SavepointPolicy says when the Controller takes savepoints of the
// running job and which old ones it disposes of.
//
// A periodic savepoint that fails leaves the job running and is tried
// again at the next time of the schedule; JobStatus.SavepointFailures
// counts them, and nothing in the Controller acts on that count unless
// the spec's Health.MaxSavepointFailures asks for it. Flink counts some
// savepoint failures itself (CheckpointFailureManager): a failure the
// JobManager sees (a refused trigger, a savepoint that expired) counts
// toward nothing, but a savepoint declined or failed on a TaskManager
// counts toward execution.checkpointing.tolerable-failed-checkpoints like
// a checkpoint (default 0: the job fails over at the first one), and a
// failed stop-with-savepoint's synchronous savepoint always fails the job
// over. Set tolerable-failed-checkpoints in Job.FlinkConfiguration for
// jobs whose savepoints may fail.
type SavepointPolicy struct {
	// Interval, if set, takes a savepoint of the running job this often
	// ("1h"), counted from the job's start and the latest savepoint.
	Interval policy.Duration `json:"interval,omitzero"`
	// Schedule, if set, takes a savepoint of the running job at the times
	// of a cron expression (savepoint.ParseCron: "30 2 * * *",
	// "@daily", ...) in TimeZone: at its first time after the job's start
	// and the latest savepoint. With Interval too, the earlier of the two
	// counts. A Controller that was not called over several of its times
	// takes one savepoint when it is called again, not one per missed
	// time.
	Schedule string `json:"schedule,omitempty"`
	// TimeZone is the IANA name of Schedule's time zone ("Europe/Berlin");
	// empty: UTC. The program needs the zone database: the system's, or
	// an import of time/tzdata.
	TimeZone string `json:"timeZone,omitempty"`
	// MaxCount, if set, disposes of the oldest savepoints of the history
	// while more than MaxCount are kept; MaxAge, if set, of those older
	// than it (savepoint.ChooseDisposals). They bound every savepoint the
	// deployment took, whatever it was taken for: periodic ones, those
	// of upgrades, restarts and stops, a user's one-shot request
	// (JobSpec.Requests), a Delete's final one once a later deploy moved
	// past it. The newest savepoint, the one the job was started from,
	// the one a rollback would restore and the one the spec's restore
	// request names are never disposed of (they count towards MaxCount),
	// nor imported savepoints (JobStatus.ImportSavepoint, Reason Imported),
	// which the deployment did not take, unless DisposeUser allows it.
	// MaxCount 0 keeps MaxStoredSavepoints, as many as a status holds; a
	// retention that would keep more is refused by Validate.
	//
	// Retention runs whenever the Controller is called with no action in
	// flight, whatever the job's situation, as long as a JobManager is
	// there (the session cluster, or the job's application cluster). A
	// savepoint leaves the history only once Flink disposed of it (or
	// found its files gone); a disposal that fails keeps its record, with
	// the error (savepoint.Disposal), and is tried again after
	// RetryInterval, doubled after each failure, MaxDisposeAttempts times.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	MaxCount int             `json:"maxCount,omitempty"`
	MaxAge   policy.Duration `json:"maxAge,omitzero"`
	// DisposeUpdate is accepted and has no effect: savepoints taken for
	// an update are bounded by MaxCount and MaxAge like every savepoint
	// the deployment took. (Before, they were kept unless it was set.)
	DisposeUpdate bool `json:"disposeUpdate,omitempty"`
	// DisposeUser lets MaxCount and MaxAge dispose of imported
	// savepoints (JobStatus.ImportSavepoint, Reason Imported) too;
	// without it they are kept, and count towards MaxCount. A user's
	// one-shot savepoint request (Reason User) is the deployment's and
	// bounded whatever this says. (Before, it kept those too unless it
	// was set.)
	DisposeUser bool `json:"disposeUser,omitempty"`
	// DisposeOnDelete makes Delete, once the job is torn down, dispose of
	// every savepoint of the history but the final one (JobStatus.Latest,
	// which a later deploy starts from) and those whose record says
	// OnDeleteKeep; a record's OnDeleteDispose disposes of it whatever
	// this says. Off: a delete keeps them (format 5).
	DisposeOnDelete bool `json:"disposeOnDelete,omitempty"`
}

// cron is p's parsed Schedule; the zero Cron when there is none or it
// is invalid (Validate reports that).
func (p SavepointPolicy) cron() (savepoint.Cron, error) {
	if p.Schedule == "" {
		if p.TimeZone != "" {
			return savepoint.Cron{}, fmt.Errorf("savepoints.timeZone %q is set without a schedule", p.TimeZone)
		}
		return savepoint.Cron{}, nil
	}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil || p.TimeZone == "Local" {
		return savepoint.Cron{}, fmt.Errorf("savepoints.timeZone %q: not an IANA time zone name", p.TimeZone)
	}
	c, err := savepoint.ParseCron(p.Schedule, loc)
	if err != nil {
		return savepoint.Cron{}, fmt.Errorf("savepoints.schedule: %w", err)
	}
	return c, nil
}

// validate reports the savepoint policy's errors: negative values, a
// schedule that does not parse, and a retention that keeps more
// savepoints than a status holds.
func (p SavepointPolicy) validate() []error {
	var errs []error
	if p.Interval < 0 || p.MaxAge < 0 || p.MaxCount < 0 {
		errs = append(errs, fmt.Errorf("savepoints: interval %v, maxCount %d and maxAge %v must not be negative",
			p.Interval.Std(), p.MaxCount, p.MaxAge.Std()))
	}
	if p.MaxCount > MaxStoredSavepoints {
		errs = append(errs, fmt.Errorf("savepoints.maxCount: %d is more than the %d savepoints a status holds (MaxStoredSavepoints)",
			p.MaxCount, MaxStoredSavepoints))
	}
	c, err := p.cron()
	if err != nil {
		return append(errs, err)
	}
	if p.MaxCount > 0 || p.MaxAge <= 0 {
		return errs
	}
	if n := p.keptWithin(c); n > MaxStoredSavepoints {
		errs = append(errs, fmt.Errorf("savepoints.maxAge: %v keeps about %d periodic savepoints, more than the %d a status holds (MaxStoredSavepoints); "+
			"set a shorter maxAge or a maxCount", p.MaxAge.Std(), n, MaxStoredSavepoints))
	}
	return errs
}

// keptWithin is how many periodic savepoints MaxAge keeps at most: those
// the interval and the schedule take within it; 0 without a MaxAge or a
// period. It stops counting past MaxStoredSavepoints.
func (p SavepointPolicy) keptWithin(c savepoint.Cron) int {
	age := p.MaxAge.Std()
	if age <= 0 {
		return 0
	}
	key := keptKey{p.Interval, p.Schedule, p.TimeZone, p.MaxAge}
	if n, ok := keptCounts.Load(key); ok {
		return n.(int) // Validate runs at every call: counted once per policy
	}
	n := p.countKept(c, age)
	keptCounts.Store(key, n)
	return n
}

// keptCounts caches keptWithin by the fields it reads.
var keptCounts sync.Map // keptKey -> int

type keptKey struct {
	interval       policy.Duration
	schedule, zone string
	maxAge         policy.Duration
}

// countKept is keptWithin, counted.
func (p SavepointPolicy) countKept(c savepoint.Cron, age time.Duration) int {
	n := 0
	if iv := p.Interval.Std(); iv > 0 {
		n = int(min(age/iv, MaxStoredSavepoints)) + 1
	}
	if p.Schedule != "" {
		// The busiest window is found by counting from a few starts.
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
		for _, start := range []time.Time{t0, t0.Add(12 * time.Hour), t0.AddDate(0, 0, 3)} {
			k := 0
			for t := c.Next(start); !t.IsZero() && t.Sub(start) <= age && k <= MaxStoredSavepoints; t = c.Next(t) {
				k++
			}
			n = max(n, k+1)
		}
	}
	return n
}

// JobSpec is the job a caller wants: plain data with stable JSON names,
// meant for a custom resource's spec or a file. The zero values of its
// policies are their defaults.
type JobSpec struct {
	// FormatVersion is the format this value was written in; 0 reads as 1.
	// A newer one is refused (ErrUnknownFormat) by Validate.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Job is what runs.
	Job JobTemplate `json:"job"`
	// State is Running (the default) or Suspended.
	// +kubebuilder:validation:Enum=Running;Suspended
	State DesiredState `json:"state,omitempty"`
	// Update says how a change of Job reaches the running job.
	Update policy.UpdatePolicy `json:"update,omitzero"`
	// Restart says whether a failed or lost job is started again.
	Restart policy.RestartPolicy `json:"restart,omitzero"`
	// Health, if its Action is set (Report or RestartFromLatestState),
	// has the running job's health judged at every observation; a job
	// judged unhealthy under RestartFromLatestState is restarted from its
	// newest state within Health.MaxStateAge. Zero: health is not judged.
	Health policy.HealthPolicy `json:"health,omitzero"`
	// Rescale says how a change of Job.Parallelism alone is carried out.
	Rescale policy.RescalePolicy `json:"rescale,omitzero"`
	// Autoscale, if enabled, has the running job's vertices sampled (one
	// request per Reconcile) and the job rescaled, through the Rescale
	// path, to the parallelism policy.RecommendScale recommends
	// (ActionAutoscale). The job then runs at that parallelism while
	// Job.Parallelism stays what it was when the autoscaler scaled it; a
	// new Job.Parallelism wins. Off by default.
	Autoscale policy.AutoscalePolicy `json:"autoscale,omitzero"`
	// Savepoints schedules savepoints and disposes of old ones.
	Savepoints SavepointPolicy `json:"savepoints,omitzero"`
	// Checkpoints, if its Interval is set, triggers checkpoints of the
	// running job through the REST API (Flink 1.17+), for jobs whose own
	// checkpoint interval is long.
	Checkpoints CheckpointPolicy `json:"checkpoints,omitzero"`
	// Restore is a restore request (policy.RestoreRequest): a new Token
	// restores the job from Restore.Path once.
	Restore policy.RestoreRequest `json:"restore,omitzero"`
	// Rollback, if enabled, sends an upgraded job that does not become
	// stable back to the last stable Job.
	Rollback RollbackPolicy `json:"rollback,omitzero"`
	// BlueGreen, if enabled, upgrades without a gap: the new job runs and
	// is healthy before the old one stops.
	BlueGreen BlueGreenPolicy `json:"blueGreen,omitzero"`
	// Bounded says that the job ends on its own (a batch job, or a
	// bounded stream): a FINISHED job is then its success even where
	// Flink's checkpoint history cannot tell. Without it, a FINISHED job
	// whose history shows the savepoint that stopped it is a stopped
	// streaming job, started again from that savepoint.
	Bounded bool `json:"bounded,omitempty"`
	// Preflight says what is checked before an upgrade or rescale of the
	// job stops it (format 4): the new job's plan against the old job, and
	// the cluster's task slots; on by default (PreflightPolicy).
	Preflight PreflightPolicy `json:"preflight,omitzero"`
	// AllowCancelWithoutState lets Delete cancel the job without a final
	// savepoint when none could be taken in time: the caller's consent to
	// losing its state. Without it such a delete leaves the job running
	// and says so.
	AllowCancelWithoutState bool `json:"allowCancelWithoutState,omitempty"`
	// Requests asks for one-shot actions (format 5): a savepoint, a
	// checkpoint, a restart or a rollback, each once per new token
	// (ActionRequests).
	Requests ActionRequests `json:"requests,omitzero"`
	// Adopt takes over a job that runs in the session cluster but was not
	// started by the Controller (format 5): one started from the Flink UI,
	// the CLI or the REST API, or by another operator. It is honoured for
	// a fresh status only (no job recorded yet, or a status after a
	// Delete): the Controller reads the job (GETs of its details, its
	// checkpoint statistics and, when they show a checkpoint, its
	// checkpoint configuration; no request that changes anything) and,
	// if it runs (RUNNING, or CREATED, INITIALIZING, RESTARTING: not
	// ended), records it as the deployment's job without restarting it
	// (Action Adopt), with the newest state that outlives it (its latest
	// savepoint, or its latest checkpoint if the job retains its
	// checkpoints, externalized, and Flink does not show it discarded)
	// and, if it is stable, as stable. Statistics or a configuration
	// that could not be read (a failover, a leader election) are read
	// again at a later call before the job is adopted. Setting it asserts that the job runs
	// Job, the spec's template: the Controller cannot tell, and a later
	// change of Job upgrades the job as for any job it started. A job
	// unknown to Flink or ended is not adopted (Reason AdoptFailed), and
	// while an adoption is pending nothing is deployed: remove Adopt to
	// deploy a job of the deployment's own. Ignored once the status
	// records a job (the adopted one, or one an upgrade started since).
	Adopt flinkapi.JobID `json:"adopt,omitempty"`
	// OnDelete says what Delete does with the job (format 5): Teardown
	// (the default) stops it with a final savepoint; Detach leaves it
	// running, sends nothing to it, and records the status as deleted
	// with the job detached (Reason Detached, JobStatus.Detached). A
	// status reused after a detach with Adopt naming the detached job
	// takes it back; without Adopt it deploys a new job of its own from
	// the newest state the status knew, beside the detached one, which
	// runs on untouched.
	// +kubebuilder:validation:Enum=Teardown;Detach
	OnDelete DeletePolicy `json:"onDelete,omitempty"`
}

// Validate reports what in s the Controller cannot act on, as one error
// matching ErrInvalidSpec that names every field at fault (and matching
// ErrUnknownFormat for a format newer than this release reads).
func (s JobSpec) Validate() error {
	if err := format.Check("lifecycle.JobSpec", s.FormatVersion, FormatVersion); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	errs := s.jobErrors()
	errs = append(errs, s.modeErrors()...)
	errs = append(errs, s.Savepoints.validate()...)
	errs = append(errs, s.policyErrors()...)
	errs = append(errs, s.Requests.validate()...)
	errs = append(errs, s.adoptErrors()...)
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b error) int { return compareStrings(a.Error(), b.Error()) })
	return fmt.Errorf("%w: %w", ErrInvalidSpec, errors.Join(errs...))
}

// jobErrors is what in s's Job the Controller cannot run.
func (s JobSpec) jobErrors() []error {
	var errs []error
	if s.Job.JarFile == "" && s.Job.JarID == "" {
		errs = append(errs, errors.New("job: set jarFile or jarID"))
	}
	if _, err := secretNames(s.Job.Args); err != nil {
		errs = append(errs, err)
	}
	if s.Job.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("job.parallelism: %d must not be negative (0: the cluster's default)", s.Job.Parallelism))
	}
	return errs
}

// modeErrors is what in s's desired state, blue/green and rollback
// settings, and checkpoint interval the Controller cannot act on.
func (s JobSpec) modeErrors() []error {
	var errs []error
	switch s.State {
	case "", DesiredRunning, DesiredSuspended:
	default:
		errs = append(errs, fmt.Errorf("state: unknown state %q; want Running or Suspended", s.State))
	}
	if s.BlueGreen.Canary && !s.BlueGreen.Enabled {
		errs = append(errs, errors.New("blueGreen.canary: needs blueGreen.enabled"))
	}
	if s.BlueGreen.Window < 0 {
		errs = append(errs, fmt.Errorf("blueGreen.window: %v must not be negative", s.BlueGreen.Window.Std()))
	}
	if s.Rollback.ReadinessTimeout < 0 {
		errs = append(errs, fmt.Errorf("rollback.readinessTimeout: %v must not be negative", s.Rollback.ReadinessTimeout.Std()))
	}
	if s.Checkpoints.Interval < 0 {
		errs = append(errs, fmt.Errorf("checkpoints.interval: %v must not be negative", s.Checkpoints.Interval.Std()))
	}
	return errs
}

// policyErrors is what the policies of s and its restore request report
// invalid, each under its field's name.
func (s JobSpec) policyErrors() []error {
	var errs []error
	for name, err := range map[string]error{"update": s.Update.Validate(), "restart": s.Restart.Validate(),
		"health": s.Health.Validate(), "rescale": s.Rescale.Validate(), "autoscale": s.Autoscale.Validate()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if !s.Restore.IsZero() {
		if err := s.Restore.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("restore: %w", err))
		}
	}
	return errs
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MaxStoredSavepoints is how many savepoints JobStatus.Savepoints holds
// for its retention: SavepointPolicy.MaxCount at most, and the count a
// MaxCount of 0 keeps. Savepoints the retention may not dispose of
// (the newest, those in use, imported ones unless the policy allows)
// are never forgotten: they stay beyond it.
const MaxStoredSavepoints = 256

// MaxFailureLength bounds JobStatus.Failure, in bytes.
const MaxFailureLength = 1024

// JobStatus is what the Controller observed and did: plain data with
// stable JSON names, meant for a custom resource's status or a file.
// Store it after every call, and pass it back unchanged; the zero
// JobStatus is a job not deployed yet.
type JobStatus struct {
	// FormatVersion is the format this value was written in, set by
	// every call; 0 reads as 1. Reconcile and Delete refuse a newer one
	// with ErrUnknownFormat before anything else; do not store the status
	// back then: it would lose what this release does not know.
	FormatVersion int `json:"formatVersion,omitempty"`
	// Name is the Controller.Name the status belongs to, recorded at the
	// first call: a status of another name is refused
	// (ErrForeignStatus), never acted on.
	Name string `json:"name,omitempty"`
	// JobID is the deployment's Flink job: the one the last operation
	// started (or adopted), else the one before.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Cluster is the cluster JobID runs in, when the Controller's
	// Deployer started it (an application cluster): the job is read and
	// stopped through its client.
	Cluster Cluster `json:"cluster,omitzero"`
	// JobState is the job's state as Flink last reported it.
	JobState flinkapi.JobState `json:"jobState,omitempty"`
	// State is where the deployment stands, Reason a stable CamelCase
	// reason for it (a policy.Reason or an operation's Outcome), and
	// Message the same for people.
	State   policy.DeploymentState `json:"state,omitempty"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	// Failure is the root cause of the job's last failure, from its
	// exceptions (at most MaxFailureLength bytes).
	Failure string `json:"failure,omitempty"`
	// Deployed is the template JobID runs and DeployedAt when it started
	// running it (empty with a JobID: a job taken over under its derived
	// id after lost writes, whose template is unknown; the spec is
	// deployed to it); Stable the last template seen stable (RUNNING, all
	// tasks running, a checkpoint completed after its start), and
	// StableJobID the job that earned it. Stability belongs to that job:
	// every new job (a deploy, restart, upgrade, rollback, rescale
	// through a new job, adoption) earns it again, also when it runs
	// the Stable template; a blue/green upgrade's new job earned it
	// beside the old one. A status without StableJobID (written by an
	// earlier release) reads as one whose Stable the job it records
	// earned.
	Deployed JobTemplate `json:"deployed,omitzero"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	DeployedAt  time.Time      `json:"deployedAt,omitzero"`
	Stable      JobTemplate    `json:"stable,omitzero"`
	StableJobID flinkapi.JobID `json:"stableJobID,omitempty"`
	// Suspended is set once the job was stopped with a savepoint because
	// the spec asked for it.
	Suspended bool `json:"suspended,omitempty"`
	// FailedJob is the fingerprint of a template that was rolled back (or
	// is to be: an upgrade to it whose new job Flink refused once the old
	// job had stopped): it is not deployed again until the spec's Job
	// changes.
	FailedJob string `json:"failedJob,omitempty"`
	// CanaryPassed is the fingerprint of the template whose restore
	// canary passed (BlueGreenPolicy.Canary): the job is upgraded to it
	// without another canary (format 4).
	CanaryPassed string `json:"canaryPassed,omitempty"`
	// JarID is the jar uploaded from JarFile.
	JarID   flinkapi.JarID `json:"jarID,omitempty"`
	JarFile string         `json:"jarFile,omitempty"`
	// Action is the action in flight, or the last one once Progress is
	// done; Target the template it deploys, and Retention the savepoint
	// policy a Dispose applies (fixed at its start).
	Action    JobAction       `json:"action,omitempty"`
	Target    JobTemplate     `json:"target,omitzero"`
	Retention SavepointPolicy `json:"retention,omitzero"`
	// Progress is the stored state of the operation of Action.
	Progress Progress `json:"progress,omitzero"`
	// RetryAt is when an action that did not succeed may be tried again
	// (a new spec is tried at once).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	RetryAt time.Time `json:"retryAt,omitzero"`
	// Latest is the newest savepoint of the deployment, and Savepoints
	// the history of its savepoints: each on storage until the
	// retention disposed of it (see SavepointPolicy.MaxCount).
	Latest     savepoint.Record  `json:"latest,omitzero"`
	Savepoints savepoint.History `json:"savepoints,omitzero"`
	// UpgradeFrom is the restore point the last upgrade started the new
	// job from (the savepoint it stopped the old job with, or its final
	// checkpoint), also one whose new job Flink refused once the old job
	// had stopped: the state a rollback restores.
	UpgradeFrom savepoint.Record `json:"upgradeFrom,omitzero"`
	// SavepointFailures counts the periodic savepoints that failed in a
	// row; one that timed out is counted once its lookup shows it did
	// not complete (LateSavepoint).
	SavepointFailures int `json:"savepointFailures,omitempty"`
	// Restarts counts the restarts after failures within the restart
	// policy's window, LastRestart the time of the last one.
	Restarts int `json:"restarts,omitempty"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LastRestart time.Time `json:"lastRestart,omitzero"`
	// Health is the history of the job's health samples.
	Health policy.HealthHistory `json:"health,omitzero"`
	// RestoreHandled is the token of the last restore request carried
	// out.
	RestoreHandled string `json:"restoreHandled,omitempty"`
	// Result is set once the job FINISHED on its own (a bounded job).
	Result JobResult `json:"result,omitzero"`
	// Checkpoint is the state of the checkpoints the spec's Checkpoints
	// policy triggers.
	Checkpoint CheckpointTrigger `json:"checkpoint,omitzero"`
	// Autoscale holds the samples and the last recommendation of
	// JobSpec.Autoscale.
	Autoscale AutoscaleStatus `json:"autoscale,omitzero"`
	// ActionSpec is the spec Action started with: the action keeps its
	// policies until it ends, whatever the spec says meanwhile.
	ActionSpec *JobSpec `json:"actionSpec,omitempty"`
	// JarDigest is the SHA-256 of JarFile's content when JarID was
	// uploaded from it.
	JarDigest string `json:"jarDigest,omitempty"`
	// StableJarID is the jar uploaded from Stable's JarFile while it
	// held the stable template's build, whose SHA-256 StableJarDigest
	// is: a rollback runs it whatever the file holds since, and session
	// housekeeping keeps it (Claim). Empty: none is known (a status of an
	// earlier release, or a stable template with a JarID of its own).
	StableJarID     flinkapi.JarID `json:"stableJarID,omitempty"`
	StableJarDigest string         `json:"stableJarDigest,omitempty"`
	// NoCheckpointing is the job that Flink reported running without
	// periodic checkpoints: it counts as stable once its tasks run.
	NoCheckpointing flinkapi.JobID `json:"noCheckpointing,omitempty"`
	// Situation is where the job stood at the last call (Plan.Situation;
	// once an action ended in it, where the action left the job, or
	// empty until the next call reads it), and Settled whether it then
	// ran the spec's job stably with nothing to do or to report
	// (Plan.Settled).
	Situation Situation `json:"situation,omitempty"`
	Settled   bool      `json:"settled,omitempty"`
	// Verdict is the verdict of the last call against the spec it was
	// given (format 6): VerdictFor derives the verdict against a spec
	// from it and the rest of the status.
	Verdict Verdict `json:"verdict,omitempty"`
	// Deleted is set once a Delete finished. A status reused after it
	// deploys the job anew, from its newest state.
	Deleted bool `json:"deleted,omitempty"`
	// Disposing is the disposal of a savepoint of the history in
	// progress (format 5).
	Disposing SavepointDisposal `json:"disposing,omitzero"`
	// RequestsHandled holds the tokens of the one-shot requests
	// (JobSpec.Requests) taken (format 5): each recorded before its
	// action sends its first request.
	RequestsHandled ActionRequests `json:"requestsHandled,omitzero"`
	// Replaced are the jobs the deployment replaced whose retained
	// checkpoints the Controller's Storage is to remove (format 5; at
	// most MaxReplacedJobs).
	Replaced []ReplacedJob `json:"replaced,omitempty"`
	// Detached is the job a Delete left running under DeleteDetach
	// (format 5): no longer the deployment's, it is never read, stopped
	// or replaced by this status again, unless a spec adopts it
	// (JobSpec.Adopt).
	Detached flinkapi.JobID `json:"detached,omitempty"`
	// RestoredFrom is the savepoint or checkpoint the deployment's job
	// (JobID) was started from, as the action that started it recorded
	// it (format 6; empty: started without state, or by an earlier
	// release). No disposal touches it while that job runs and has no
	// savepoint of its own in the history (Savepoints): until then it
	// is the state the job stands on, also once a later action or an
	// import (ImportSavepoint) took the place of its progress and Latest.
	RestoredFrom string `json:"restoredFrom,omitempty"`
	// LateSavepoint is a savepoint triggered beside the running job whose
	// action timed out while Flink may still complete it: looked up at
	// later calls until it is recorded or known failed (format 7).
	LateSavepoint LateSavepoint `json:"lateSavepoint,omitzero"`
	// Audit is what the last audit of the Controller's Storage found and
	// did, and whether one is due (format 8; nil: none ran, or no
	// Storage). See Controller.AuditInterval and ApplyAudit.
	Audit *AuditSummary `json:"audit,omitempty"`
}

// actionSpec is the spec the action in flight carries out: the one it
// started with, or spec for a status that did not record one.
func (s *JobStatus) actionSpec(spec JobSpec) JobSpec {
	if s.ActionSpec != nil {
		return *s.ActionSpec
	}
	return spec
}

// stableJob is the job that earned Stable: StableJobID, or, in a status
// an earlier release wrote (Stable without StableJobID), the job it
// records.
func (s *JobStatus) stableJob() flinkapi.JobID {
	if s.StableJobID == "" && !s.Stable.IsZero() {
		return s.JobID
	}
	return s.StableJobID
}

// runsStably reports whether the deployment's current job earned
// stability running the deployed template: it was seen with all its
// tasks running and a checkpoint completed after its start (or its
// tasks running, without checkpointing). A new job has not, whatever
// template it runs, until it is seen so itself.
func (s *JobStatus) runsStably() bool {
	return s.JobID != "" && s.stableJob() == s.JobID && s.Deployed.equal(s.Stable)
}

// markStable records that the current job runs the deployed template
// stably.
func (s *JobStatus) markStable() {
	s.Deployed.DeepCopyInto(&s.Stable)
	s.StableJobID = s.JobID
}

// InFlight reports whether an action is under way.
func (s *JobStatus) InFlight() bool {
	return s.Action != "" && !s.Progress.Done() && s.Progress.Phase != ""
}

// Converged reports whether s carries out spec: no action in flight, and
// either the job is suspended as spec asks, or it runs spec's Job, stably
// (the current job itself seen with all its tasks running and a
// checkpoint completed after its start, or, without checkpointing, its
// tasks running: a new job running the last stable template is not
// stable until then), with
// spec's restore request and one-shot requests (Requests) taken, or it ran spec's Job and FINISHED
// on its own (Result). A spec whose Job was rolled back never converges:
// Reason says so (RolledBack) until the spec changes.
func (s *JobStatus) Converged(spec JobSpec) bool {
	spec = spec.effective(s)
	switch {
	case s.InFlight():
		return false
	case spec.State == DesiredSuspended:
		return s.Suspended || s.JobID == "" || s.Deleted
	case finished(s) && !s.Suspended && !s.Deleted:
		return s.Deployed.equal(spec.Job) && !spec.Restore.Pending(s.RestoreHandled)
	}
	return s.runsSettled() && s.Deployed.equal(spec.Job) && s.runsStably() && !spec.Restore.Pending(s.RestoreHandled) &&
		len(spec.Requests.Pending(s.RequestsHandled)) == 0
}

// runsSettled reports whether s records a job, neither suspended nor
// deleted, that runs with its state settled.
func (s *JobStatus) runsSettled() bool {
	return s.JobID != "" && !s.Suspended && !s.Deleted && s.Settled && s.State == policy.Running
}

// DeepCopyInto copies in into out, deeply.
func (in *JobTemplate) DeepCopyInto(out *JobTemplate) {
	*out = *in
	out.Args = slices.Clone(in.Args)
	out.FlinkConfiguration = maps.Clone(in.FlinkConfiguration)
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *JobTemplate) DeepCopy() *JobTemplate {
	if in == nil {
		return nil
	}
	out := new(JobTemplate)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, deeply.
func (in *JobSpec) DeepCopyInto(out *JobSpec) {
	*out = *in
	in.Job.DeepCopyInto(&out.Job)
	in.Update.DeepCopyInto(&out.Update)
	in.Restart.DeepCopyInto(&out.Restart)
	in.Health.DeepCopyInto(&out.Health)
	in.Rescale.DeepCopyInto(&out.Rescale)
	in.Autoscale.DeepCopyInto(&out.Autoscale)
	in.Restore.DeepCopyInto(&out.Restore)
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *JobSpec) DeepCopy() *JobSpec {
	if in == nil {
		return nil
	}
	out := new(JobSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, deeply.
func (in *JobStatus) DeepCopyInto(out *JobStatus) {
	*out = *in
	in.Deployed.DeepCopyInto(&out.Deployed)
	in.Stable.DeepCopyInto(&out.Stable)
	in.Target.DeepCopyInto(&out.Target)
	in.Progress.DeepCopyInto(&out.Progress)
	in.Savepoints.DeepCopyInto(&out.Savepoints)
	in.Latest.DeepCopyInto(&out.Latest)
	in.UpgradeFrom.DeepCopyInto(&out.UpgradeFrom)
	in.Health.DeepCopyInto(&out.Health)
	in.Result.DeepCopyInto(&out.Result)
	in.Autoscale.DeepCopyInto(&out.Autoscale)
	out.ActionSpec = in.ActionSpec.DeepCopy()
	out.Replaced = slices.Clone(in.Replaced)
	out.Audit = in.Audit.DeepCopy()
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *JobStatus) DeepCopy() *JobStatus {
	if in == nil {
		return nil
	}
	out := new(JobStatus)
	in.DeepCopyInto(out)
	return out
}
