package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/bytesize"
)

// MaxAuditRequests bounds the Storage requests of one Controller.Audit:
// one List (or Entries, where the Storage has it) per directory read,
// that is each savepoint and checkpoint directory, each checkpoint
// directory of one of the deployment's jobs, each of the deployment's
// snapshots (for its _metadata and size) and each shared/ and
// taskowned/ of its jobs (for their size, with StorageEntries only).
// What is left when it is reached is reported Unread
// (StorageAudit.Truncated).
const MaxAuditRequests = 128

// AuditKind is what an entry found on storage (or a location the ledger
// names) is to the deployment (StorageAudit). The strings are stable.
type AuditKind string

// The kinds of StorageAudit entries, a closed set (AuditKinds).
const (
	// AuditInHistory: a completed savepoint (or checkpoint) that the
	// savepoint history (JobStatus.Savepoints) records.
	AuditInHistory AuditKind = "InHistory"
	// AuditRestorePoint: a completed snapshot the deployment may restore
	// from, which no disposal touches: JobStatus.Latest and the history's
	// newest record, UpgradeFrom (until the deployment is deleted),
	// RestoredFrom (while the job has no savepoint of its own), the
	// restore point of the last action (Progress.Replace.RestoreFrom), the
	// spec's and the action's restore requests, a teardown's kept
	// savepoint, or the restore-point store's record under the
	// Controller's Name. It counts here also when the history records it.
	AuditRestorePoint AuditKind = "RestorePoint"
	// AuditRetained: an entry of the checkpoint directory of the
	// deployment's current job (JobStatus.JobID, or the new job of the
	// action in flight): a completed chk-N, shared/, taskowned/.
	AuditRetained AuditKind = "Retained"
	// AuditReplaced: an entry of the checkpoint directory of a job the
	// deployment ran before and replaced: a job of JobStatus.Replaced, of
	// a history record, of the action's Progress, or a canary,
	// blue/green or next job whose id is derived from one of them (an
	// aborted blue/green job or a canary, whose ids the status no longer
	// holds once they ended).
	AuditReplaced AuditKind = "Replaced"
	// AuditUnrecorded: a completed savepoint (it holds its _metadata)
	// whose name, savepoint-<first 6 hex of the job id>-..., names one of
	// the deployment's jobs, and that nothing in the status records: a
	// savepoint whose record was lost, or taken from outside. Six hex
	// digits are all a name holds: a foreign job whose id starts alike
	// counts here too.
	AuditUnrecorded AuditKind = "Unrecorded"
	// AuditIncomplete: a savepoint or chk-N directory of one of the
	// deployment's jobs without its _metadata: one being written (a
	// running job's checkpoint in progress), or one that failed or was
	// partly removed.
	AuditIncomplete AuditKind = "Incomplete"
	// AuditForeign: an entry of a listed directory that is not the
	// deployment's (another job's checkpoints or savepoints, other
	// files). It is never read further.
	AuditForeign AuditKind = "Foreign"
	// AuditMissing: a location the history or a restore point names
	// that storage does not hold as a completed snapshot: absent from
	// the directory listed above it, or there without its _metadata.
	AuditMissing AuditKind = "Missing"
	// AuditUnread: a location that was not read, so that its kind is
	// not known: the request budget (MaxAuditRequests) was spent, or the
	// directory above it could not be listed (StorageAudit.Notes).
	AuditUnread AuditKind = "Unread"
)

// AuditKinds are the values of AuditKind, in the order StorageAudit's
// String shows them.
var AuditKinds = []AuditKind{AuditRestorePoint, AuditInHistory, AuditRetained, AuditReplaced, AuditUnrecorded,
	AuditIncomplete, AuditMissing, AuditUnread, AuditForeign}

// Valid reports whether k is one of AuditKinds.
func (k AuditKind) Valid() bool { return slices.Contains(AuditKinds, k) }

// AuditEntry is one entry of a StorageAudit: a snapshot directory (a
// savepoint, a chk-N), a shared/ or taskowned/ directory, a foreign
// entry of a listed directory, or a location of the ledger.
type AuditEntry struct {
	// Path is the entry's path as the Storage lists it (a location of
	// the ledger as the status records it, for Missing and Unread).
	Path string `json:"path"`
	// Kind is what it is to the deployment.
	Kind AuditKind `json:"kind"`
	// JobID is the job it belongs to, when known: the history's record,
	// the checkpoint directory it lies in, or the deployment's only job
	// whose id begins as a savepoint's name says.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Size is the bytes of the files right in the directory (or of the
	// file) when Sized: read through StorageEntries. Files in deeper
	// directories are not counted.
	Size  int64 `json:"size,omitempty"`
	Sized bool  `json:"sized,omitempty"`
	// Modified is when the snapshot was completed (its _metadata was
	// written), else the newest time the Storage gave; zero if none.
	Modified time.Time `json:"modified,omitzero"`
}

// AuditTotal is the count of the entries of one kind, and their bytes:
// Bytes sums the Sized ones, Unsized counts the others.
type AuditTotal struct {
	Count   int   `json:"count"`
	Bytes   int64 `json:"bytes"`
	Unsized int   `json:"unsized,omitempty"`
}

// StorageAudit is what lies on storage for one deployment, compared with
// its ledger (Controller.Audit).
type StorageAudit struct {
	// Dirs are the savepoint and checkpoint directories the audit
	// listed, in the order listed.
	Dirs []string `json:"dirs"`
	// Entries are what it found and the ledger's locations, sorted by
	// Path.
	Entries []AuditEntry `json:"entries"`
	// Totals counts the entries by kind.
	Totals map[AuditKind]AuditTotal `json:"totals"`
	// Requests is the number of Storage requests (List or Entries) made,
	// at most MaxAuditRequests; Listed the directories they read, in
	// order.
	Requests int      `json:"requests"`
	Listed   []string `json:"listed"`
	// FlinkRequests is the number of REST requests made: the current
	// job's checkpoint statistics, read (one GET) only when the status
	// and spec name no checkpoint directory.
	FlinkRequests int `json:"flinkRequests,omitempty"`
	// Truncated is set when MaxAuditRequests was reached: some entries
	// are Unread, some directories not listed.
	Truncated bool `json:"truncated,omitempty"`
	// ListFailures counts the requests that failed: their directories'
	// entries are Unread, or not known at all (a savepoint or checkpoint
	// directory).
	ListFailures int `json:"listFailures,omitempty"`
	// Notes say, for people, what could not be read or found: a
	// directory whose listing failed, a checkpoint directory that
	// nothing names.
	Notes []string `json:"notes,omitempty"`
	// Applied is what the Controller did with the audit: set by
	// Reconcile's audits and ApplyAudit; nil for Audit, which changes
	// nothing.
	Applied *AuditApplied `json:"applied,omitempty"`
}

// Count is the number of entries of kind k.
func (a StorageAudit) Count(k AuditKind) int { return a.Totals[k].Count }

// Of returns the entries of kind k, in order.
func (a StorageAudit) Of(k AuditKind) []AuditEntry {
	var out []AuditEntry
	for _, e := range a.Entries {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// String shows the audit for people: one line of totals per kind found,
// then every entry but the foreign ones, with its job, size and time.
func (a StorageAudit) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage audit: %d entries in %d directories, %d storage requests", len(a.Entries), len(a.Dirs), a.Requests)
	if a.FlinkRequests > 0 {
		fmt.Fprintf(&b, ", %d Flink request", a.FlinkRequests)
	}
	if a.Truncated {
		fmt.Fprintf(&b, " (budget of %d reached: partial)", MaxAuditRequests)
	}
	b.WriteString("\n")
	a.writeTotals(&b)
	a.writeEntries(&b)
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if a.Applied != nil {
		a.Applied.write(&b)
	}
	return b.String()
}

// writeTotals writes one line of totals per kind found.
func (a StorageAudit) writeTotals(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, k := range AuditKinds {
		t, ok := a.Totals[k]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, t.Count, totalBytes(t))
	}
	_ = tw.Flush()
}

// writeEntries writes every entry but the foreign ones, with its job,
// size and time.
func (a StorageAudit) writeEntries(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, e := range a.Entries {
		if e.Kind == AuditForeign {
			continue
		}
		size, when := "-", "-"
		if e.Sized {
			size = bytesize.String(e.Size)
		}
		if !e.Modified.IsZero() {
			when = e.Modified.UTC().Format(time.RFC3339)
		}
		job := string(e.JobID)
		if job == "" {
			job = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Kind, e.Path, job, size, when)
	}
	_ = tw.Flush()
}

// write writes what applying the audit did, one line each.
func (do *AuditApplied) write(b *strings.Builder) {
	for _, l := range do.Recorded {
		fmt.Fprintf(b, "  recorded in the history (Found): %s\n", l)
	}
	if do.RestorePoint != "" {
		fmt.Fprintf(b, "  restore point moved to %s\n", do.RestorePoint)
	}
	for _, id := range do.Replaced {
		fmt.Fprintf(b, "  checkpoints of replaced job %s to be removed\n", id)
	}
	for _, s := range do.Skipped {
		fmt.Fprintf(b, "  left as it is: %s\n", s)
	}
}

// totalBytes shows t's bytes, and how many entries have none known.
func totalBytes(t AuditTotal) string {
	switch {
	case t.Unsized == t.Count:
		return "size unknown"
	case t.Unsized > 0:
		return fmt.Sprintf("%s (+%d of unknown size)", bytesize.String(t.Bytes), t.Unsized)
	}
	return bytesize.String(t.Bytes)
}

// ErrNoStorage is returned by Audit for a Controller without a Storage.
var ErrNoStorage = errors.New("lifecycle: Controller.Storage is not set: the audit reads the deployment's savepoint and checkpoint directories through it")

// Configuration keys of the savepoint directory.
const (
	keySavepointDir    = "execution.checkpointing.savepoint-dir" // 1.20+, the only one in 2.x
	keyOldSavepointDir = "state.savepoints.dir"                  // up to 1.x
)

// Audit lists what lies on storage for the deployment of spec and st
// and compares it with its ledger: the savepoint history, the restore
// points, the retained checkpoints of its jobs. It changes nothing, on
// storage or in Flink: it sends List (or Entries) requests to
// c.Storage, at most MaxAuditRequests, and at most one GET to Flink
// (the current job's checkpoint statistics, when nothing names the
// checkpoint directory); st is not changed. It returns ErrNoStorage
// without a Storage, and the errors of a status Reconcile refuses
// (ErrUnknownFormat, ErrForeignStatus, ErrInvalidStatus) or of ctx;
// what a Storage or Flink request could not read is said in the audit's
// Notes, its entries Unread.
//
// The directories listed: the savepoint directories (those of the
// ledger's locations, Env.TargetDirectory, and the
// execution.checkpointing.savepoint-dir or state.savepoints.dir of the
// spec's and status's templates) and the checkpoint directories (the
// templates' execution.checkpointing.dir or state.checkpoints.dir,
// those the Replaced records and the ledger's checkpoint locations
// name, else the one the current job's checkpoint statistics show).
// Each entry is classified by its name: a savepoint-<6 hex>-<12 hex>
// directory of one of the deployment's jobs, or a <job id> checkpoint
// directory of one, is read further (its chk-N, shared/ and taskowned/;
// each snapshot for its _metadata and size); every other entry is
// Foreign and not read. See AuditKind for the kinds.
//
// Audit only reports; Reconcile runs the same audit at its own times and
// applies it to the status (Controller.AuditInterval), and ApplyAudit
// does so now.
func (c *Controller) Audit(ctx context.Context, spec JobSpec, st JobStatus) (StorageAudit, error) {
	if c.Storage == nil {
		return StorageAudit{}, ErrNoStorage
	}
	st = *st.DeepCopy()
	if err := c.begin(ctx, &st); err != nil {
		return StorageAudit{}, err
	}
	return c.audit(ctx, spec, &st, true, false)
}

// audit is Audit of st, which it does not change, once begin accepted
// it; flink allows its one GET to Flink; apply reads the savepoints the
// ledger lacks before those it records (an audit to be applied).
func (c *Controller) audit(ctx context.Context, spec JobSpec, st *JobStatus, flink, apply bool) (StorageAudit, error) {
	a := &auditor{c: c, storage: c.Storage, budget: MaxAuditRequests, flink: flink, unrecFirst: apply}
	a.entries, _ = c.Storage.(StorageEntries)
	a.ledger(ctx, spec, st)
	a.dirs(ctx, spec, st)
	if err := a.run(ctx); err != nil {
		return StorageAudit{}, err
	}
	return a.report(), nil
}

// auditor is the state of one Audit.
type auditor struct {
	c       *Controller
	storage Storage
	entries StorageEntries // nil: List only, no sizes
	budget  int
	flink   bool // the GET to Flink is allowed
	// unrecFirst reads the savepoints the ledger lacks before those it
	// records (an audit that is applied).
	unrecFirst bool

	// The ledger: locations recorded (canonical path to job) and
	// restore points; the deployment's jobs, current ones, and the
	// savepoint name prefixes of its jobs.
	recorded map[string]flinkapi.JobID
	restore  map[string]flinkapi.JobID
	ours     map[flinkapi.JobID]bool
	current  map[flinkapi.JobID]bool
	prefixes map[string][]flinkapi.JobID

	// toList are the directories to list, as the ledger or spec writes
	// them, each once; orig is the form of each ledger location.
	toList []string
	orig   map[string]string

	out   StorageAudit
	found map[string]AuditEntry // by canonical path
	read  map[string]bool       // directories listed, canonical
}

// addJob adds a job of the deployment.
func (a *auditor) addJob(id flinkapi.JobID) {
	if id != "" {
		a.ours[flinkapi.JobID(strings.ToLower(string(id)))] = true
	}
}

// ledger gathers what the status records.
func (a *auditor) ledger(ctx context.Context, spec JobSpec, st *JobStatus) {
	a.recorded, a.restore = map[string]flinkapi.JobID{}, map[string]flinkapi.JobID{}
	a.ours, a.current, a.prefixes = map[flinkapi.JobID]bool{}, map[flinkapi.JobID]bool{}, map[string][]flinkapi.JobID{}
	a.orig = map[string]string{}
	for _, r := range st.Savepoints.Records {
		if c := canonical(r.Location); c != "" {
			a.recorded[c] = r.JobID
			a.orig[c] = strings.TrimSuffix(r.Location, "/")
		}
		a.addJob(r.JobID)
	}
	a.restorePoints(ctx, spec, st)
	a.jobs(st)
}

// addRestore records loc as a restore point of job (or, with none, of
// the job the history records it of).
func (a *auditor) addRestore(loc string, job flinkapi.JobID) {
	c := canonical(loc)
	if c == "" {
		return
	}
	if job == "" {
		job = a.recorded[c]
	}
	a.restore[c] = job
	if _, ok := a.orig[c]; !ok {
		a.orig[c] = strings.TrimSuffix(loc, "/")
	}
}

// restorePoints gathers what the ledger keeps from every disposal, as
// it keeps it: the state the job started from only while it stands on
// it, the upgrade's restore point only until the deployment is deleted,
// and the restore-point store's record.
func (a *auditor) restorePoints(ctx context.Context, spec JobSpec, st *JobStatus) {
	for _, loc := range neverDisposed(spec, st) {
		a.addRestore(loc, "")
	}
	a.addRestore(st.Latest.Location, st.Latest.JobID)
	if !deleted(st) {
		a.addRestore(st.UpgradeFrom.Location, st.UpgradeFrom.JobID)
	}
	if a.c.Store != nil && a.c.Name != "" {
		switch rec, ok, err := a.c.Store.Get(ctx, a.c.Name); {
		case err != nil:
			a.note("the restore-point store could not be read: %v", err)
		case ok:
			a.addRestore(rec.Location, rec.JobID)
		}
	}
}

// jobs gathers the deployment's jobs: those the status names, those
// whose ids are derived from them, which of them are current, and their
// id prefixes.
func (a *auditor) jobs(st *JobStatus) {
	a.addJob(st.Latest.JobID)
	a.addJob(st.UpgradeFrom.JobID)
	a.addJob(st.JobID)
	a.addJob(st.StableJobID)
	p := &st.Progress
	a.addJob(p.JobID)
	a.addJob(p.Replace.PreviousJobID)
	a.addJob(p.Submit.NewJobID)
	for _, r := range st.Replaced {
		a.addJob(r.JobID)
		a.addJob(r.NewJobID)
	}
	// The jobs whose ids are derived from these: a canary's, a blue/green
	// upgrade's new job, the next job of an upgrade or restart (ended
	// ones included, which the status no longer names).
	for _, id := range slices.Sorted(maps.Keys(a.ours)) {
		a.addJob(canaryJobID(id))
		a.addJob(blueGreenJobID(id))
		a.addJob(derivedJobID(string(id)))
	}
	if st.Detached != "" {
		delete(a.ours, flinkapi.JobID(strings.ToLower(string(st.Detached))))
	}
	for _, id := range []flinkapi.JobID{st.JobID, inFlightJob(st)} {
		if id = flinkapi.JobID(strings.ToLower(string(id))); a.ours[id] {
			a.current[id] = true
		}
	}
	for id := range a.ours {
		if len(id) >= 6 {
			a.prefixes[string(id[:6])] = append(a.prefixes[string(id[:6])], id)
		}
	}
}

// inFlightJob is the new job of the action in flight, if any.
func inFlightJob(st *JobStatus) flinkapi.JobID {
	if st.InFlight() {
		return st.Progress.Submit.NewJobID
	}
	return ""
}

// dirs gathers the savepoint and checkpoint directories to list: the
// savepoint directories first, then the checkpoint directories, each
// sorted, each once.
func (a *auditor) dirs(ctx context.Context, spec JobSpec, st *JobStatus) {
	templates := []JobTemplate{spec.Job, st.Deployed, st.Target, st.Stable}
	if st.ActionSpec != nil {
		templates = append(templates, st.ActionSpec.Job)
	}
	var sp, ck []string
	add := func(list *[]string, d string) {
		if d = strings.TrimSuffix(strings.TrimSpace(d), "/"); canonical(d) != "" {
			*list = append(*list, d)
		}
	}
	for _, t := range templates {
		add(&ck, configuredCheckpointDir(t))
		for _, k := range []string{keySavepointDir, keyOldSavepointDir} {
			add(&sp, t.FlinkConfiguration[k])
		}
	}
	add(&sp, a.c.TargetDirectory)
	for _, r := range st.Replaced {
		add(&ck, r.CheckpointDir)
	}
	for _, loc := range a.orig {
		if d := checkpointDirIn(loc); d != "" {
			add(&ck, d)
		} else {
			add(&sp, parentDir(loc))
		}
	}
	add(&ck, checkpointDirIn(strings.TrimSuffix(st.Progress.Replace.Observed.Checkpoint, "/")))
	if len(ck) == 0 {
		add(&ck, a.checkpointDirFromFlink(ctx, st))
	}
	if len(sp) == 0 {
		a.note("no savepoint directory is known: the history is empty and the spec sets none (%s)", keySavepointDir)
	}
	seen := map[string]bool{}
	for _, list := range [][]string{sp, ck} {
		slices.Sort(list)
		for _, d := range list {
			if c := canonical(d); !seen[c] {
				seen[c] = true
				a.toList = append(a.toList, d)
			}
		}
	}
}

// checkpointDirFromFlink reads the current job's checkpoint statistics
// for the directory of its checkpoints.
func (a *auditor) checkpointDirFromFlink(ctx context.Context, st *JobStatus) string {
	if st.JobID == "" || st.Deleted {
		a.note("no checkpoint directory is known: the spec sets none (%s) and no job runs", keyCheckpointDir)
		return ""
	}
	if !a.flink {
		a.note("no checkpoint directory is known: the spec sets none (%s), and the call's requests to Flink are spent", keyCheckpointDir)
		return ""
	}
	api, err := a.c.jobAPI(st)
	if err != nil || api == nil {
		a.note("no checkpoint directory is known: the spec sets none (%s), and job %s cannot be read: %v", keyCheckpointDir, st.JobID, err)
		return ""
	}
	a.out.FlinkRequests++
	stats, err := api.Checkpoints(ctx, st.JobID)
	if err != nil {
		a.note("no checkpoint directory is known: the spec sets none (%s), and the checkpoints of job %s could not be read: %v", keyCheckpointDir, st.JobID, err)
		return ""
	}
	var paths []string
	if stats.LatestCompleted != nil {
		paths = append(paths, stats.LatestCompleted.ExternalPath)
	}
	for _, cp := range stats.History {
		if !cp.IsSavepoint {
			paths = append(paths, cp.ExternalPath)
		}
	}
	for _, p := range paths {
		if d := checkpointDirOf(st.JobID, p); d != "" {
			return d
		}
	}
	a.note("no checkpoint directory is known: the spec sets none (%s), and job %s shows no completed checkpoint", keyCheckpointDir, st.JobID)
	return ""
}

// checkpointDirIn is the checkpoint directory of loc when loc is a
// checkpoint, <dir>/<job id>/chk-N; empty otherwise.
func checkpointDirIn(loc string) string {
	parts := strings.Split(loc, "/")
	if n := len(parts); n >= 3 && isCheckpointName(parts[n-1]) && isJobIDName(parts[n-2]) {
		return strings.Join(parts[:n-2], "/")
	}
	return ""
}

// isJobIDName reports whether name is a Flink job id: 32 hex digits.
func isJobIDName(name string) bool { return flinkapi.JobID(name).Validate() == nil }

// savepointJobPrefix is the job id prefix of a savepoint directory's
// name, savepoint-<6 hex>-<hex>; ok is false for other names.
func savepointJobPrefix(name string) (prefix string, ok bool) {
	rest, ok := strings.CutPrefix(name, "savepoint-")
	if !ok || len(rest) < 8 || rest[6] != '-' {
		return "", false
	}
	prefix, rand := strings.ToLower(rest[:6]), strings.ToLower(rest[7:])
	hex := func(s string) bool { return s != "" && strings.Trim(s, "0123456789abcdef") == "" }
	return prefix, hex(prefix) && hex(rand)
}

// note adds a note for people.
func (a *auditor) note(format string, args ...any) {
	a.out.Notes = append(a.out.Notes, fmt.Sprintf(format, args...))
}

// list reads dir's entries, within the budget. ok is false when the
// budget is spent or the listing failed (noted).
func (a *auditor) list(ctx context.Context, dir string) (es []StorageEntry, ok bool, err error) {
	if a.out.Requests >= a.budget {
		a.out.Truncated = true
		return nil, false, nil
	}
	a.out.Requests++
	a.out.Listed = append(a.out.Listed, dir)
	if a.entries != nil {
		es, err = a.entries.Entries(ctx, dir)
	} else {
		var ps []string
		ps, err = a.storage.List(ctx, dir)
		for _, p := range ps {
			// Without sizes a directory is told apart by what lies in it:
			// an entry that has none counts as a file.
			es = append(es, StorageEntry{Path: p, Dir: true})
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		a.note("%s could not be listed: %v", dir, err)
		a.out.ListFailures++
		return nil, false, nil
	}
	a.read[canonical(dir)] = true
	return es, true, nil
}

// pending is an entry found that is to be read further.
type pending struct {
	e     StorageEntry
	facts auditFacts
}

// auditQueues are the entries found that are read further, in the order
// run reads them.
type auditQueues struct {
	ledger, job, ledgerCk, snap, unrec, size []pending
}

// run lists the directories and classifies what it finds: the
// directories first, then what the ledger names, then the deployment's
// job directories and their snapshots, then the savepoints the ledger
// lacks, then shared/ and taskowned/ (for their size).
func (a *auditor) run(ctx context.Context) error {
	a.found, a.read = map[string]AuditEntry{}, map[string]bool{}
	var q auditQueues
	for _, d := range a.toList {
		es, ok, err := a.list(ctx, d)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		a.out.Dirs = append(a.out.Dirs, d)
		for _, e := range es {
			a.sortTop(e, &q)
		}
	}
	// The jobs' checkpoint directories first: a few listings that find
	// what there is, before one read per snapshot spends the budget.
	for _, jq := range q.job {
		if err := a.listJob(ctx, jq, &q); err != nil {
			return err
		}
	}
	early, late := q.ledger, q.unrec
	if a.unrecFirst {
		// The savepoints the ledger lacks first: what an applied audit
		// acts on, whatever the size of the history.
		early, late = q.unrec, q.ledger
	}
	if err := a.readAll(ctx, slices.Concat(early, late, q.ledgerCk, q.snap, q.size)); err != nil {
		return err
	}
	a.missing()
	return nil
}

// sortTop classifies an entry e of a listed directory, or queues it to
// be read further.
func (a *auditor) sortTop(e StorageEntry, q *auditQueues) {
	cp := canonical(e.Path)
	name := path.Base(cp)
	id := flinkapi.JobID(strings.ToLower(name))
	f := a.ledgerFacts(cp)
	prefix, savepointName := savepointJobPrefix(name)
	switch {
	case f.Recorded || f.RestorePoint:
		f.Snapshot = true
		q.ledger = append(q.ledger, pending{e: e, facts: f})
	case isJobIDName(name) && (a.ours[id] || a.ledgerWithin(cp)):
		q.job = append(q.job, pending{e: e, facts: auditFacts{Job: id, Ours: a.ours[id], Current: a.current[id]}})
	case savepointName && len(a.prefixes[prefix]) > 0:
		f.Ours, f.Savepoint, f.Snapshot = true, true, true
		if ids := a.prefixes[prefix]; len(ids) == 1 {
			f.Job = ids[0]
		}
		q.unrec = append(q.unrec, pending{e: e, facts: f})
	default:
		if isJobIDName(name) {
			f.Job = id
		}
		a.classify(e, f, nil)
	}
}

// listJob lists the checkpoint directory of one of the deployment's jobs
// (jq) and classifies its entries, or queues them to be read further.
func (a *auditor) listJob(ctx context.Context, jq pending, q *auditQueues) error {
	es, ok, err := a.list(ctx, jq.e.Path)
	if err != nil {
		return err
	}
	if !ok {
		jq.facts.Snapshot = true // unread: what it holds is not known
		a.classify(jq.e, jq.facts, nil)
		return nil
	}
	for _, e := range es {
		cp := canonical(e.Path)
		f := a.ledgerFacts(cp)
		if !f.Recorded && !f.RestorePoint {
			f.Job, f.Ours, f.Current = jq.facts.Job, jq.facts.Ours, jq.facts.Current
		} else if f.Job == "" {
			f.Job = jq.facts.Job
		}
		switch name := path.Base(cp); {
		case f.Recorded || f.RestorePoint:
			f.Snapshot = true
			q.ledgerCk = append(q.ledgerCk, pending{e: e, facts: f})
		case !f.Ours:
			a.classify(e, f, nil)
		case isCheckpointName(name):
			f.Snapshot = true
			q.snap = append(q.snap, pending{e: e, facts: f})
		case e.Dir && a.entries != nil:
			q.size = append(q.size, pending{e: e, facts: f})
		default:
			a.classify(e, f, nil)
		}
	}
	return nil
}

// readAll reads and classifies each of qs in order.
func (a *auditor) readAll(ctx context.Context, qs []pending) error {
	for _, q := range qs {
		if err := a.readSnapshot(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ledgerWithin reports whether a location of the ledger lies under dir
// (canonical).
func (a *auditor) ledgerWithin(dir string) bool {
	for _, m := range []map[string]flinkapi.JobID{a.recorded, a.restore} {
		for loc := range m {
			if strings.HasPrefix(loc, dir+"/") {
				return true
			}
		}
	}
	return false
}

// ledgerFacts are what the ledger says of the location cp.
func (a *auditor) ledgerFacts(cp string) auditFacts {
	var f auditFacts
	if job, ok := a.recorded[cp]; ok {
		f.Recorded, f.Job = true, job
	}
	if job, ok := a.restore[cp]; ok {
		f.RestorePoint = true
		if f.Job == "" {
			f.Job = job
		}
	}
	if f.Job != "" {
		f.Ours = a.ours[flinkapi.JobID(strings.ToLower(string(f.Job)))]
	}
	return f
}

// readSnapshot reads q's directory for its _metadata and size, and
// classifies it; Unread when the budget is spent or the listing failed.
func (a *auditor) readSnapshot(ctx context.Context, q pending) error {
	if _, done := a.found[canonical(q.e.Path)]; done {
		return nil
	}
	if !q.e.Dir {
		// A file the ledger names: it is there; nothing to read.
		q.facts.Read, q.facts.Complete = true, true
		a.classify(q.e, q.facts, []StorageEntry{q.e})
		return nil
	}
	es, ok, err := a.list(ctx, q.e.Path)
	if err != nil {
		return err
	}
	if ok {
		q.facts.Read = true
		q.facts.Complete = slices.ContainsFunc(es, func(e StorageEntry) bool { return path.Base(e.Path) == "_metadata" && !(a.entries != nil && e.Dir) })
	}
	a.classify(q.e, q.facts, es)
	return nil
}

// classify records e with the kind f gives it; inside are its own
// entries when it was read.
func (a *auditor) classify(e StorageEntry, f auditFacts, inside []StorageEntry) {
	out := AuditEntry{Path: e.Path, Kind: auditKind(f), JobID: f.Job, Modified: e.Modified}
	switch {
	case f.Read && a.entries != nil:
		out.Sized = true
		for _, x := range inside {
			if !x.Dir {
				out.Size += x.Size
			}
			if x.Modified.After(out.Modified) {
				out.Modified = x.Modified
			}
		}
		for _, x := range inside {
			if path.Base(x.Path) == "_metadata" && !x.Dir {
				out.Modified = x.Modified
			}
		}
	case !e.Dir && a.entries != nil:
		out.Size, out.Sized = e.Size, true
	}
	a.found[canonical(e.Path)] = out
}

// missing adds the ledger's locations not found: Missing when a
// directory above them was listed and did not hold the way down, else
// Unread.
func (a *auditor) missing() {
	locs := slices.Sorted(maps.Keys(a.recorded))
	for _, l := range slices.Sorted(maps.Keys(a.restore)) {
		if _, ok := a.recorded[l]; !ok {
			locs = append(locs, l)
		}
	}
	for _, loc := range locs {
		if _, ok := a.found[loc]; ok {
			continue
		}
		job := a.recorded[loc]
		if job == "" {
			job = a.restore[loc]
		}
		kind := AuditUnread
		for child, dir := loc, parentDir(loc); dir != ""; child, dir = dir, parentDir(dir) {
			if !a.read[dir] {
				continue
			}
			if _, ok := a.found[child]; !ok || child == loc {
				kind = AuditMissing // the listing of dir did not show the way down
			}
			break
		}
		a.found[loc] = AuditEntry{Path: a.orig[loc], Kind: kind, JobID: job}
	}
}

// report sorts and totals what was found.
func (a *auditor) report() StorageAudit {
	out := a.out
	out.Totals = map[AuditKind]AuditTotal{}
	for _, e := range a.found {
		out.Entries = append(out.Entries, e)
		t := out.Totals[e.Kind]
		t.Count++
		if e.Sized {
			t.Bytes += e.Size
		} else {
			t.Unsized++
		}
		out.Totals[e.Kind] = t
	}
	slices.SortFunc(out.Entries, func(x, y AuditEntry) int { return strings.Compare(x.Path, y.Path) })
	if out.Dirs == nil {
		out.Dirs = []string{}
	}
	return out
}

// auditFacts are what the audit knows of an entry, from which auditKind
// tells its kind.
type auditFacts struct {
	// Recorded: the history records its location; RestorePoint: it is
	// one of the restore points.
	Recorded, RestorePoint bool
	// Job is the job it belongs to, if known; Ours: one of the
	// deployment's jobs; Current: the deployment's current job.
	Job           flinkapi.JobID
	Ours, Current bool
	// Snapshot: a savepoint or chk-N directory (or a location of the
	// ledger), complete only with its _metadata; Savepoint: a savepoint
	// by its name.
	Snapshot, Savepoint bool
	// Read: its entries were listed; Complete: they hold _metadata.
	Read, Complete bool
}

// auditKind is the kind of an entry of which f is known: the rule of
// the audit. The ledger's locations first (a restore point before the
// history), then the deployment's jobs' snapshots by their _metadata,
// then the entries of their checkpoint directories by whose job they
// are; all else is Foreign.
func auditKind(f auditFacts) AuditKind {
	switch {
	case f.Recorded || f.RestorePoint:
		switch {
		case !f.Read:
			return AuditUnread
		case !f.Complete:
			return AuditMissing
		case f.RestorePoint:
			return AuditRestorePoint
		}
		return AuditInHistory
	case !f.Ours:
		return AuditForeign
	case f.Snapshot && !f.Read:
		return AuditUnread
	case f.Snapshot && !f.Complete:
		return AuditIncomplete
	case f.Savepoint:
		return AuditUnrecorded
	case f.Current:
		return AuditRetained
	}
	return AuditReplaced
}
