package flinktest

import (
	"fmt"
	"math"
	"math/bits"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// How long the JobManager takes for the steps of a job's life. They are
// close to what a local Flink cluster shows.
const (
	initDelay       = 150 * time.Millisecond // INITIALIZING -> CREATED
	scheduleDelay   = 200 * time.Millisecond // CREATED -> RUNNING, once slots are free
	deployDelay     = 400 * time.Millisecond // RUNNING -> all tasks RUNNING
	cancelDelay     = 100 * time.Millisecond // CANCELLING -> CANCELED
	failingDelay    = 40 * time.Millisecond  // FAILING -> FAILED
	slotTimeout     = 5 * time.Minute        // slot.request.timeout
	maxCheckpointMs = 40                     // a checkpoint takes at most this long (ms)
	historySize     = 10                     // web.checkpoints.history
	maxExceptions   = 20                     // default of maxExceptions
)

// Names and ids of the test job's operators. The ids are hashes of the
// operators' uids in Flink, so every run of the job has the same ones.
const (
	sourceVertexID   = "b93d204074064b03a853367828fb3dfe"
	counterVertexID  = "0e3160945c69999b81da5f032a648b30"
	sourceVertexName = "Source: key-source"
	counterVertex    = "counter -> discard: Writer"
	taskManagerID    = "flinktest-tm-1"
	taskManagerHost  = "localhost"
	dataPort         = 43707
)

// CounterJobClass is the entry class of flinkkit's test job
// (internal/testkit/testjob), whose program arguments the fake checks as the job
// does: an unknown argument or a missing --out fails the jar run with 400.
// Jobs of other entry classes take the same arguments but ignore unknown
// ones.
const CounterJobClass = "dev.flinkkit.testjob.CounterJob"

// jobSpec is what the program arguments of the simulated job say.
type jobSpec struct {
	params          map[string]string // every flag and its value, without the dashes: GET /jobs/:jobid/config's user-config
	name            string
	out             string // folder of the .count files; "" for none
	keys            int
	rateMilli       uint64 // events per 1000 seconds, all keys together
	parallelism     int    // 0: the request's or the default
	checkpointEvery time.Duration
	failAt          int64
	failOnce        bool // --fail-once: fail at failAt only while the out folder has no failure mark
	restartAttempts int
	restartDelay    time.Duration
	snapshotDelay   time.Duration // added to every checkpoint and savepoint
	records         int64         // --records: the job ends FINISHED after this many events; 0: never
	uidSuffix       string        // --uid-suffix: appended to the counter's uid, which changes its vertex id
	label           string        // --label: named at the end of a --fail-at failure's message
	maxParallelism  int           // --max-parallelism: the counter's maximum parallelism; 0: Flink's default
}

// maxParallelismLimit is Flink's largest maximum parallelism.
const maxParallelismLimit = 1 << 15

// counterUID is the uid of the test job's counter, the first operator of
// its second vertex.
const counterUID = "flinkkit-counter"

// counterID returns the vertex id of the counter's chain: Flink derives a
// vertex id from the uid of its first operator (the 128-bit MurmurHash3 of
// the uid, seed 0), so --uid-suffix gives the vertex another id.
func (sp jobSpec) counterID() string {
	if sp.uidSuffix == "" {
		return counterVertexID
	}
	return vertexIDOfUID(counterUID + sp.uidSuffix)
}

// maxParallelism returns the maximum parallelism of a vertex of the job:
// the counter's --max-parallelism, else Flink's default for the
// parallelism (1.5 times it rounded up to a power of two, 128 to 32768).
func (j *job) maxParallelism(vertex string) int {
	if vertex != sourceVertexID && j.spec.maxParallelism > 0 {
		return j.spec.maxParallelism
	}
	return defaultMaxParallelism(j.parallelism)
}

// defaultMaxParallelism is Flink's default maximum parallelism of an
// operator of parallelism p.
func defaultMaxParallelism(p int) int {
	n := 1
	for n < p+p/2 {
		n <<= 1
	}
	return min(max(n, 128), maxParallelismLimit)
}

// parseArgs reads the test job's program arguments. strict rejects unknown
// flags and a missing --out, as the test job does.
func parseArgs(args []string, defInterval time.Duration, strict bool) (jobSpec, error) {
	sp := jobSpec{name: "flinkkit-counter", keys: 3, rateMilli: 50_000, checkpointEvery: defInterval, restartDelay: 200 * time.Millisecond}
	for i := 0; i < len(args); i++ {
		flag := args[i]
		var value string
		if k, v, ok := strings.Cut(flag, "="); ok && strings.HasPrefix(flag, "--") {
			flag, value = k, v
		} else {
			if i+1 >= len(args) {
				if strict {
					return sp, fmt.Errorf("missing value for %s", flag)
				}
				break
			}
			i++
			value = args[i]
		}
		if name, ok := strings.CutPrefix(flag, "--"); ok {
			if sp.params == nil {
				sp.params = map[string]string{}
			}
			sp.params[name] = value
		}
		num := func(min int64) (int64, error) {
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < min {
				return 0, fmt.Errorf("%s must be a number >= %d: %s", flag, min, value)
			}
			return n, nil
		}
		var err error
		var n int64
		switch flag {
		case "--out":
			sp.out = value
		case "--keys":
			if n, err = num(1); err == nil {
				sp.keys = int(min(n, 1_000_000))
			}
		case "--rate":
			r, perr := strconv.ParseFloat(value, 64)
			if perr != nil || !(r > 0) || r > 1e9 {
				err = fmt.Errorf("--rate must be > 0: %s", value)
			} else {
				sp.rateMilli = max(1, uint64(math.Round(r*1000)))
			}
		case "--parallelism":
			if n, err = num(1); err == nil {
				sp.parallelism = int(min(n, 1<<15))
			}
		case "--checkpoint-interval":
			if n, err = num(0); err == nil {
				sp.checkpointEvery = time.Duration(n) * time.Millisecond
				if n > 0 && n < 10 {
					sp.checkpointEvery = 10 * time.Millisecond
				}
			}
		case "--fail-at":
			if n, err = num(0); err == nil {
				sp.failAt = n
			}
		case "--fail-once":
			if value != "true" && value != "false" {
				err = fmt.Errorf("--fail-once must be true or false: %s", value)
			}
			sp.failOnce = value == "true"
		case "--restart-attempts":
			if n, err = num(0); err == nil {
				sp.restartAttempts = int(min(n, 1<<20))
			}
		case "--restart-delay":
			if n, err = num(0); err == nil {
				sp.restartDelay = time.Duration(n) * time.Millisecond
			}
		case "--snapshot-delay":
			if n, err = num(0); err == nil {
				sp.snapshotDelay = time.Duration(min(n, 1<<40)) * time.Millisecond
			}
		case "--records":
			if n, err = num(0); err == nil {
				sp.records = n
			}
		case "--record-delay":
			// The fake's counter is never busy; the flag is checked as
			// the test job checks it (SetVertexMetrics sets the load).
			_, err = num(0)
		case "--name":
			sp.name = value
		case "--uid-suffix":
			sp.uidSuffix = value
		case "--label":
			sp.label = value
		case "--max-parallelism":
			if n, err = num(1); err == nil && n > maxParallelismLimit {
				err = fmt.Errorf("--max-parallelism must be at most %d: %s", maxParallelismLimit, value)
			}
			if err == nil {
				sp.maxParallelism = int(n)
			}
		default:
			if strict {
				return sp, fmt.Errorf("unknown argument: %s", flag)
			}
		}
		if err != nil && strict {
			return sp, err
		}
	}
	if strict && sp.out == "" {
		return sp, fmt.Errorf("--out DIR is required")
	}
	return sp, nil
}

// eventsIn returns how many events a source at rateMilli/1000 per second
// emits in d.
func eventsIn(d time.Duration, rateMilli uint64) int64 {
	if d <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(d), rateMilli)
	const div = 1_000_000_000_000 // ns per second times 1000
	if hi >= div {
		return math.MaxInt64 / 2
	}
	q, _ := bits.Div64(hi, lo, div)
	return int64(min(q, math.MaxInt64/2))
}

// timeForEvents returns how long the source takes to emit k events.
func timeForEvents(k int64, rateMilli uint64) time.Duration {
	if k <= 0 {
		return 0
	}
	const div = 1_000_000_000_000
	hi, lo := bits.Mul64(uint64(k), div)
	if hi >= rateMilli {
		return math.MaxInt64 / 4
	}
	q, r := bits.Div64(hi, lo, rateMilli)
	if r > 0 {
		q++
	}
	return time.Duration(min(q, math.MaxInt64/4))
}

// keyCounts derives each key's count from the number of events processed:
// the source emits key-(i mod keys) as its i-th event.
func keyCounts(n int64, keys int) map[string]int64 {
	m := make(map[string]int64, keys)
	if keys <= 0 {
		return m
	}
	k := int64(keys)
	for i := int64(0); i < k; i++ {
		c := n / k
		if i < n%k {
			c++
		}
		m["key-"+strconv.FormatInt(i, 10)] = c
	}
	return m
}

// snapshot is a savepoint or checkpoint on the (simulated) disk.
type snapshot struct {
	location     string
	job          flinkapi.JobID
	checkpointID int64
	savepoint    bool
	events       int64 // the job's state: events processed
	keys         int
	removed      bool               // disposed, or discarded by Flink
	taken        time.Time          // when it was triggered: the time of its state
	completed    time.Time          // when it completed
	trigger      flinkapi.TriggerID // of the savepoint or stop that took it
	// counter is the vertex id of the counter whose keyed state the
	// snapshot holds, and counterMax its maximum parallelism then.
	counter    string
	counterMax int
	// sourceState and counterState are the state sizes of the source's
	// and the counter's vertices in the snapshot, in bytes.
	sourceState, counterState int64
}

// size returns the state size of vertex in the snapshot, and whether the
// snapshot has the vertex.
func (snap *snapshot) size(vertex string) (int64, bool) {
	switch vertex {
	case sourceVertexID:
		return snap.sourceState, true
	case snap.counter:
		return snap.counterState, true
	}
	return 0, false
}

// restoreMismatch is why a job cannot restore snap, as Flink says when it
// maps the snapshot's keyed state to the new job: a counter of the same
// uid whose maximum parallelism was set (--max-parallelism) to another
// than the snapshot's (an unset one takes the snapshot's); "" if none.
//
// A snapshot whose counter the job lacks (another uid, --uid-suffix) and
// that holds state for it cannot be restored either unless
// allowNonRestored: Flink maps a snapshot's state by operator id, skips an
// operator without state and refuses one with state.
func (j *job) restoreMismatch(snap *snapshot, allowNonRestored bool) string {
	id := j.spec.counterID()
	if snap != nil && snap.counter != "" && snap.counter != id && snap.counterState > 0 && !allowNonRestored {
		return fmt.Sprintf("Failed to rollback to checkpoint/savepoint %s. Cannot map checkpoint/savepoint state for operator %s to the new program, "+
			"because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.",
			snap.location, snap.counter)
	}
	if snap == nil || snap.counter != id || snap.counterMax == 0 || j.spec.maxParallelism <= 0 || j.spec.maxParallelism == snap.counterMax {
		return ""
	}
	return fmt.Sprintf("Failed to rollback to checkpoint/savepoint Checkpoint Metadata. Max parallelism mismatch between checkpoint/savepoint state and new program. "+
		"Cannot map operator %s with max parallelism %d to new program with max parallelism %d. "+
		"This indicates that the program has been changed in a non-compatible way after the checkpoint/savepoint.",
		id, snap.counterMax, j.spec.maxParallelism)
}

// Kinds of checkpoints in the statistics.
const (
	typeCheckpoint    = "CHECKPOINT"
	typeSavepoint     = "SAVEPOINT"
	typeSyncSavepoint = "SYNC_SAVEPOINT"
)

// checkpoint is one checkpoint or savepoint of a job, pending or done.
type checkpoint struct {
	id         int64
	kind       string
	status     flinkapi.CheckpointStatus
	trigger    time.Time
	completeAt time.Time // when it completes, while pending
	ack        time.Time
	failedAt   time.Time
	failureMsg string
	events     int64
	location   string    // planned while pending
	disk       *snapshot // once completed
	format     string    // savepoints: CANONICAL or NATIVE
	op         *operation
	subtasks   int

	// Faults decided at trigger time.
	failWith     string    // the checkpoint fails at completeAt with this message
	jobFailAt    time.Time // the job fails at this time while it is pending
	jobFailCause string
	stopFailure  string // a stop: the job fails right after the savepoint (cause)
}

func (c *checkpoint) isSavepoint() bool { return c.kind != typeCheckpoint }

func (c *checkpoint) discarded() bool { return c.disk != nil && c.disk.removed }

// exceptionEntry is one entry of a job's exception history.
type exceptionEntry struct {
	class      string
	trace      string
	at         time.Time
	task       string // "" for failures of the whole job
	concurrent []*exceptionEntry
}

// job is one job of the cluster, a simulation of flinkkit's test job: a
// rate-limited source emitting keys round robin and a keyed counter.
type job struct {
	s           *Server // nil in the copies of the REST caches
	idx         int     // its index in cluster.jobs
	dirty       bool    // in cluster.dirty: its next event may have changed
	waitListed  bool    // in cluster.waiting
	id          flinkapi.JobID
	jar         flinkapi.JarID
	entryClass  string
	args        []string
	spec        jobSpec
	parallelism int
	submitted   time.Time
	// app is the id of the application the job belongs to (2.3+): its own
	// id for a jar run, the run-application's otherwise; "" before 2.3.
	app string
	// failedBefore: the task attempt started with its --fail-once mark
	// written, so it does not fail at --fail-at.
	failedBefore bool

	state      flinkapi.JobState
	ts         map[flinkapi.JobState]time.Time
	end        time.Time
	lastChange time.Time
	initFailed bool // never got past INITIALIZING: no vertices

	// The next scheduled transition of the job's state.
	phaseAt time.Time
	phase   func(t time.Time)
	// Waiting for slots in CREATED.
	waitingSlots bool
	slotDeadline time.Time
	usesSlots    bool

	// Tasks and the counter.
	tasksRunning bool
	tasksStart   time.Time // start time of the vertices of the current attempt
	tasksEnd     time.Time
	counting     bool  // the source emits
	attemptStart int64 // events processed when the current attempt's tasks started
	base         int64
	baseAt       time.Time
	filesN       int64 // events already written to the .count files
	attempt      int
	restartsLeft int

	// Checkpointing.
	checkpointing bool
	interval      time.Duration
	nextTrigger   time.Time
	nextID        int64
	checkpoints   []*checkpoint // all, oldest first
	pending       []*checkpoint
	counts        flinkapi.CheckpointCounts
	restored      *restoreInfo
	initial       *snapshot // restored from at submission
	restoredFrom  string
	restoreFault  string // why the restore of initial fails (restoreMismatch); "": it does not
	// stateBytes are the state sizes set for vertices (SetVertexStateSize),
	// in place of the simulated job's own.
	stateBytes     map[string]int64
	retainOnCancel bool
	retainOnFail   bool
	stopping       *checkpoint // a stop with savepoint in progress
	// owned is the checkpoint of its own that a JobManager failover with
	// high availability recovered the job from: in the job's completed
	// checkpoint store with the job's checkpoint properties, so subsumed
	// by its next checkpoint and discarded when the job ends without
	// retention, as its other checkpoints are. A snapshot the job was
	// submitted with (savepointPath, restore mode NO_CLAIM) is not the
	// job's: it is never discarded.
	owned *snapshot

	exceptions []*exceptionEntry // oldest first
	bounds     flinkapi.ResourceRequirements
	// rescales is the rescale history (WithRescaleHistory), oldest first,
	// at most the configured size.
	rescales []*rescaleRecord
}

// restoreInfo is "latest.restored" of the checkpoint statistics.
type restoreInfo struct {
	id        int64
	at        time.Time
	savepoint bool
	location  string
}

// clone returns a copy of j as the REST caches keep it: later changes to
// j do not show in the copy, except the removal of checkpoint files, which
// Flink's statistics also show live.
func (j *job) clone() *job {
	c := *j
	c.ts = make(map[flinkapi.JobState]time.Time, len(j.ts))
	for k, v := range j.ts {
		c.ts[k] = v
	}
	c.checkpoints = make([]*checkpoint, len(j.checkpoints))
	for i, cp := range j.checkpoints {
		cc := *cp
		c.checkpoints[i] = &cc
	}
	c.pending = nil
	c.exceptions = append([]*exceptionEntry(nil), j.exceptions...)
	if j.restored != nil {
		r := *j.restored
		c.restored = &r
	}
	c.bounds = make(flinkapi.ResourceRequirements, len(j.bounds))
	for k, v := range j.bounds {
		c.bounds[k] = v
	}
	c.rescales = append([]*rescaleRecord(nil), j.rescales...)
	c.phase = nil
	c.s = nil
	return &c
}

// eventsAt returns how many events the job has processed at t (t not
// before the last change of the counter).
func (j *job) eventsAt(t time.Time) int64 {
	if !j.counting {
		return j.base
	}
	n := j.base + eventsIn(t.Sub(j.baseAt), j.spec.rateMilli)
	if j.spec.records > 0 {
		n = min(n, max(j.spec.records, j.base))
	}
	return n
}

// freeze stops the source at t.
func (j *job) freeze(t time.Time) {
	j.base = j.eventsAt(t)
	j.baseAt = t
	j.setCounting(false)
}

// resume starts the source at t from events.
func (j *job) resume(t time.Time, events int64) {
	j.base, j.baseAt = events, t
	j.setCounting(true)
}

// setCounting starts or stops the source, telling the server, which keeps
// the jobs writing .count files by folder.
func (j *job) setCounting(on bool) {
	if j.counting == on {
		return
	}
	j.counting = on
	if j.s == nil || j.spec.out == "" {
		return
	}
	if on {
		j.s.startsWriting(j)
	} else {
		j.s.stopsWriting(j)
	}
}

func (j *job) setState(st flinkapi.JobState, t time.Time) {
	j.state = st
	j.ts[st] = t
	j.lastChange = t
	if st.IsGloballyTerminal() {
		j.end = t
	}
}

// schedule sets the job's next transition.
func (j *job) schedule(at time.Time, f func(time.Time)) {
	j.phaseAt, j.phase = at, f
}

func (j *job) unschedule() { j.phaseAt, j.phase = time.Time{}, nil }

// failEventIndex returns the index of the event at which the counter
// throws (--fail-at), or -1.
func (j *job) failEventIndex() int64 {
	if j.spec.failAt <= 0 || j.failedBefore || !j.counting {
		return -1
	}
	k := int64(j.spec.keys)
	idx := max(j.base, (j.spec.failAt-1)*k)
	if j.spec.records > 0 && idx >= j.spec.records {
		return -1 // the source ends first
	}
	return idx
}

// subtasks is the number of subtasks of the job: two vertices of the same
// parallelism.
func (j *job) subtasks() int { return 2 * j.parallelism }

// taskName names a subtask of the counter vertex as the exception history
// does.
func (j *job) taskName() string {
	return fmt.Sprintf("%s (1/%d) - execution #%d", counterVertex, j.parallelism, j.attempt)
}

// latest returns the newest checkpoint (savepoint false) or savepoint
// (any savepoint kind) with status.
func (j *job) latest(savepoint bool, status flinkapi.CheckpointStatus) *checkpoint {
	for i := len(j.checkpoints) - 1; i >= 0; i-- {
		c := j.checkpoints[i]
		if c.status == status && c.isSavepoint() == savepoint {
			return c
		}
	}
	return nil
}

// latestAny returns the newest checkpoint or savepoint with status.
func (j *job) latestAny(status flinkapi.CheckpointStatus) *checkpoint {
	var best *checkpoint
	for _, c := range j.checkpoints {
		if c.status == status && (best == nil || c.id > best.id) {
			best = c
		}
	}
	return best
}

// history returns the checkpoints of the statistics' history, newest
// first.
func (j *job) history() []*checkpoint {
	h := append([]*checkpoint(nil), j.checkpoints...)
	sort.SliceStable(h, func(a, b int) bool { return h[a].id > h[b].id })
	if len(h) > historySize {
		h = h[:historySize]
	}
	return h
}

func (j *job) findCheckpoint(id int64) *checkpoint {
	for _, c := range j.history() {
		if c.id == id {
			return c
		}
	}
	return nil
}

// savepointLocation returns the directory of a new savepoint under dir, a
// location as the user or the configuration gave it.
func savepointLocation(dir string, id flinkapi.JobID, suffix string) string {
	name := "savepoint-" + string(id)[:6] + "-" + suffix
	switch {
	case strings.HasPrefix(dir, "/"):
		return "file:" + path.Join(path.Clean(dir), name)
	case strings.HasPrefix(dir, "file:"):
		p := strings.TrimPrefix(dir, "file:")
		p = "/" + strings.TrimLeft(p, "/")
		return "file:" + path.Join(path.Clean(p), name)
	default:
		return strings.TrimRight(dir, "/") + "/" + name
	}
}

// normalizeLocation gives the form of a location under which the fake
// stores snapshots: "file:/a/b" for local paths in any spelling.
func normalizeLocation(loc string) string {
	loc = strings.TrimSpace(loc)
	switch {
	case strings.HasPrefix(loc, "/"):
		return "file:" + path.Clean(loc)
	case strings.HasPrefix(loc, "file://localhost/"):
		return "file:" + path.Clean(strings.TrimPrefix(loc, "file://localhost"))
	case strings.HasPrefix(loc, "file:"):
		p := "/" + strings.TrimLeft(strings.TrimPrefix(loc, "file:"), "/")
		return "file:" + path.Clean(p)
	}
	return strings.TrimRight(loc, "/")
}
