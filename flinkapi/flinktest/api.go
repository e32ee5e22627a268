package flinktest

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// JobInfo is what the server knows about a job, beyond its REST API.
type JobInfo struct {
	ID          flinkapi.JobID
	Name        string
	State       flinkapi.JobState
	JarID       flinkapi.JarID
	EntryClass  string
	ProgramArgs []string
	Parallelism int
	Submitted   time.Time
	// RestoredFrom is the savepoint or checkpoint path the job was started
	// from (jar run's savepointPath); empty when it started without state
	// or the path named no snapshot.
	RestoredFrom string
	// Initial is the location of the snapshot the job restored from at
	// its submission: RestoredFrom's, or the latest checkpoint a
	// JobManager that failed over (with high availability) recovered
	// the job from; empty when it started without state.
	Initial string
	// Restored is the location of the snapshot the job's checkpoint
	// statistics show as latest restored; empty until the job restored
	// one (a job recovered by a JobManager failover restores its
	// checkpoint once it is created, not while it initialises).
	Restored string
	// RestoredAt is when the job restored Restored: its creation, or its
	// latest restart after a task failure (which restores its latest
	// completed checkpoint, never a savepoint).
	RestoredAt time.Time
	// Events is the job's state: the number of events its counter has
	// processed. A savepoint or checkpoint records it, and a job restored
	// from one continues from it.
	Events int64
	// Counts is each key's count, derived from Events: the source emits
	// key-0, key-1, ... round robin (--keys).
	Counts map[string]int64
	// Restarts counts the restarts after task failures.
	Restarts int
	// Application is the application the job belongs to (Flink 2.3+): for
	// a jar run the job's own id, for a run-application the application's;
	// empty before 2.3. Two live jobs with one Application are the
	// duplicate a JobManager failover can leave (see RestartOptions).
	Application flinkapi.ApplicationID
	// TasksRunning reports whether all the job's tasks run: the job is
	// RUNNING and its tasks were scheduled and deployed (not CREATED,
	// DEPLOYING or restarting after a failure).
	TasksRunning bool
}

func (s *Server) jobInfo(j *job, now time.Time) JobInfo {
	n := j.eventsAt(now)
	info := JobInfo{
		ID: j.id, Name: j.spec.name, State: j.state, JarID: j.jar, EntryClass: j.entryClass,
		ProgramArgs: append([]string(nil), j.args...), Parallelism: j.parallelism, Submitted: j.submitted,
		Events: n, Counts: keyCounts(n, j.spec.keys), Restarts: j.attempt, Application: flinkapi.ApplicationID(j.app),
		TasksRunning: j.state == flinkapi.JobRunning && j.tasksRunning,
	}
	if j.restored != nil {
		info.Restored, info.RestoredAt = j.restored.location, j.restored.at
	}
	if j.initial != nil {
		info.RestoredFrom = j.restoredFrom
		info.Initial = j.initial.location
	}
	return info
}

// Job returns what the server knows about a job of the current JobManager
// (a restart without high availability forgets every job).
func (s *Server) Job(id flinkapi.JobID) (JobInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advance(now)
	j := s.cl.job(id)
	if j == nil {
		return JobInfo{}, false
	}
	return s.jobInfo(j, now), true
}

// Jobs returns the jobs of the current JobManager in submission order.
func (s *Server) Jobs() []JobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advance(now)
	out := make([]JobInfo, 0, len(s.cl.jobs))
	for _, j := range s.cl.jobs {
		out = append(out, s.jobInfo(j, now))
	}
	return out
}

// ReadCounts returns the counts the jobs writing to the folder dir (their
// --out argument) have published, as the test job's <dir>/<key>.count
// files would hold them: a key appears once a job counted it, its value is
// the latest count written, and it stays after the job ends. An unknown
// folder gives an empty map. Its signature fits contract.Target.ReadCounts.
func (s *Server) ReadCounts(dir string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advance(now)
	s.syncFolder(dir, now)
	s.syncFolder(filepath.Clean(dir), now)
	out := map[string]int64{}
	files := s.outDirs[dir]
	if files == nil {
		files = s.outDirs[filepath.Clean(dir)]
	}
	for k, v := range files {
		out[k] = v
	}
	return out, nil
}

// SavepointExists reports whether the savepoint or checkpoint at location
// exists on the simulated disk: it was completed and neither disposed nor
// discarded. Its signature fits contract.Target.SavepointExists.
func (s *Server) SavepointExists(location string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	snap := s.snapshots[normalizeLocation(location)]
	return snap != nil && !snap.removed, nil
}

// Snapshot is a savepoint or checkpoint that a job completed, as the
// simulated disk keeps it (across JobManager restarts).
type Snapshot struct {
	Location     string
	Job          flinkapi.JobID
	CheckpointID int64
	Savepoint    bool
	// TriggerID is the trigger id of the savepoint or stop that took it;
	// empty for checkpoints.
	TriggerID flinkapi.TriggerID
	// Taken is when it was triggered: the time of the state it holds.
	Taken time.Time
	// Completed is when it completed.
	Completed time.Time
	// Removed reports that it was disposed of or discarded by Flink.
	Removed bool
}

// Snapshots returns every savepoint and checkpoint completed so far,
// removed ones included, in the order they completed.
func (s *Server) Snapshots() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	out := make([]Snapshot, 0, len(s.snapshots))
	for _, sn := range s.snapshots {
		out = append(out, Snapshot{Location: sn.location, Job: sn.job, CheckpointID: sn.checkpointID, Savepoint: sn.savepoint,
			TriggerID: sn.trigger, Taken: sn.taken, Completed: sn.completed, Removed: sn.removed})
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Completed.Equal(out[b].Completed) {
			return out[a].Completed.Before(out[b].Completed)
		}
		return out[a].Location < out[b].Location
	})
	return out
}

// FailJob makes a task of a running job fail now with cause ("a.b.Class:
// message", or a message for a RuntimeException). The job restarts from
// its latest checkpoint if its restart strategy (--restart-attempts)
// allows, else it fails. It returns an error for an unknown job or one
// whose tasks do not run.
func (s *Server) FailJob(id flinkapi.JobID, cause string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advance(now)
	j := s.cl.job(id)
	if j == nil {
		return fmt.Errorf("flinktest: FailJob: no job %s", id)
	}
	if j.state != flinkapi.JobRunning || !j.tasksRunning {
		return fmt.Errorf("flinktest: FailJob: job %s is %s, its tasks do not run", id, j.state)
	}
	s.cl.failJob(j, now, userCause(cause))
	return nil
}

// RestartOptions describe a JobManager restart.
type RestartOptions struct {
	// HA keeps the jobs, as with high availability: jobs that had not
	// ended are recovered from their latest checkpoint (or the savepoint
	// they started from) and start again, with their ids; ended jobs are
	// forgotten. Without HA the new JobManager knows no jobs.
	//
	// On Flink 2.3+ HA keeps the applications that had not ended too, and
	// the new JobManager executes them again itself (FLIP-560): a
	// run-application whose job was recovered keeps it; one whose job was
	// not (lost, or not yet submitted when the JobManager failed: see
	// FaultRestart) runs its program again, which submits a new job with
	// the request's job id, or a new id if the request fixed none,
	// restored from the request's savepoint. A jar run's application is
	// kept with its recovered job, and forgotten with a lost one. A
	// client that submits again what Flink re-executed makes a second
	// live job of one deployment.
	HA bool
	// Lose lists jobs that are not recovered even with HA, as if their
	// metadata were lost.
	Lose []flinkapi.JobID
	// Downtime is how long the JobManager is away: requests in that time
	// get connection resets.
	Downtime time.Duration
}

// RestartJobManager restarts the JobManager now. Every trigger id and
// asynchronous result is forgotten, and so are the jobs unless o.HA.
// Uploaded jars, savepoints, retained checkpoints and the jobs' .count
// files stay: they live on disk.
func (s *Server) RestartJobManager(o RestartOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restartLocked(o, "")
}

// restartLocked restarts the JobManager. pending names a run-application
// whose program had not submitted its job yet when the JobManager failed:
// its job, which the fake submitted with the request, is not recovered.
func (s *Server) restartLocked(o RestartOptions, pending string) {
	now := s.clock.Now()
	s.advance(now)
	old := s.cl
	for _, j := range old.jobs {
		s.syncFiles(j, now)
		if j.counting {
			j.freeze(now)
		}
	}
	back := now.Add(max(o.Downtime, 0))
	s.cl = newCluster(s)
	s.downUntil = back
	if !o.HA {
		return
	}
	lost := map[flinkapi.JobID]bool{}
	for _, id := range o.Lose {
		lost[id] = true
	}
	for _, j := range old.jobs {
		if j.state.IsGloballyTerminal() || lost[j.id] || (pending != "" && j.app == pending) {
			continue
		}
		nj := &job{
			id: j.id, jar: j.jar, entryClass: j.entryClass, args: j.args, spec: j.spec, app: j.app,
			parallelism: j.parallelism, checkpointing: j.checkpointing, interval: j.interval,
			retainOnCancel: j.retainOnCancel, retainOnFail: j.retainOnFail,
			restoredFrom: j.restoredFrom, initial: j.initial, owned: j.owned,
		}
		if c := j.latest(false, flinkapi.CheckpointCompleted); c != nil && c.disk != nil && !c.disk.removed {
			// Recovered from the job's completed checkpoint store: the
			// checkpoint stays the job's own.
			nj.initial, nj.owned = c.disk, c.disk
		}
		path := ""
		if nj.initial != nil {
			path = nj.initial.location
		}
		s.cl.submit(nj, back, path)
	}
	if s.cfg.pers.hasApplications() {
		s.recoverApps(old, back, pending)
	}
}

// recoverApps carries the applications of the old JobManager that had not
// ended over to the new one, as Flink 2.3 recovers them from its
// ApplicationStore, and executes again those whose job was not recovered.
// The lock must be held.
func (s *Server) recoverApps(old *cluster, back time.Time, pending string) {
	for _, id := range old.appOrder {
		a := old.apps[id]
		switch state, _ := old.appState(a); state {
		case "FINISHED", "FAILED", "CANCELED":
			continue
		}
		na := &application{id: a.id, name: a.name, job: a.job, created: a.created, cancelAt: a.cancelAt, prog: a.prog}
		if id == pending || s.cl.byID[na.job] == nil {
			na.job = ""
		}
		if na.job == "" {
			if a.prog == nil || !a.cancelAt.IsZero() {
				// A jar run's application lives by its job's execution
				// plan; without it there is nothing to recover.
				continue
			}
			jid := a.prog.jobID
			if jid == "" {
				jid = flinkapi.JobID(s.newHex())
			}
			if s.cl.byID[jid] == nil {
				j := s.programJob(a.prog, jid)
				j.app = id
				s.cl.submit(j, back, a.prog.savepointPath)
			}
			na.job = jid
		}
		s.cl.apps[id] = na
		s.cl.appOrder = append(s.cl.appOrder, id)
	}
}
