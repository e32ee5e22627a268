package policy

import (
	"time"

	"github.com/flinkkit/flinkkit/savepoint"
)

// SelectRestorePoint returns the newest restore point in obs of the given
// kinds (KindSavepoint, KindCheckpoint; none given: both; others are
// ignored) that is no older
// than maxAge at now, and whether there is one. maxAge is used as given,
// without defaults.
//
// Candidates are the Location of obs.Savepoint (a savepoint of the current
// operation, dated by its TriggerTime, else its LastUpdate),
// obs.LatestSavepoint and obs.LatestCheckpoint. A candidate without a path
// or without a time is never chosen: its age cannot be known. A state dated
// after now (clock skew) counts as age zero. Of two candidates of the same
// time the savepoint wins. The returned point has a non-empty Path.
func SelectRestorePoint(obs Observations, maxAge time.Duration, now time.Time, kinds ...RestoreKind) (RestorePoint, bool) {
	savepoints, checkpoints := len(kinds) == 0, len(kinds) == 0
	for _, k := range kinds {
		switch k {
		case KindSavepoint:
			savepoints = true
		case KindCheckpoint:
			checkpoints = true
		}
	}
	var s selection
	selectState(&s, &obs, maxAge, now, checkpoints)
	switch {
	case savepoints:
		return s.chosen, s.chosen.IsSet()
	case checkpoints && s.checkpoint.IsSet() && young(s.checkpoint, maxAge, now):
		return s.checkpoint, true
	}
	return RestorePoint{}, false
}

// selection is the outcome of looking at the candidates.
type selection struct {
	// chosen is the newest accepted point within the age limit, or zero.
	chosen RestorePoint
	// newest is the newest accepted point of any age, or zero.
	newest RestorePoint
	// skipped is a checkpoint within the age limit that was not accepted.
	skipped RestorePoint
	// savepoint and checkpoint are the newest of each kind, any age.
	savepoint, checkpoint RestorePoint
	// any reports that some candidate of any kind and age exists.
	any bool
}

// youngExists reports whether some candidate of any kind is within the age
// limit.
func (s *selection) youngExists() bool { return s.chosen.IsSet() || s.skipped.IsSet() }

// selectState collects the candidates into s, which must be zero, and
// picks the newest within maxAge. Checkpoints are accepted only if
// withCheckpoints.
func selectState(s *selection, obs *Observations, maxAge time.Duration, now time.Time, withCheckpoints bool) {
	s.savepoint = newer(statusPoint(&obs.Savepoint), recordPoint(&obs.LatestSavepoint))
	if obs.LatestCheckpoint.Path != "" && !obs.LatestCheckpoint.Time.IsZero() {
		s.checkpoint = RestorePoint{Kind: KindCheckpoint, Path: obs.LatestCheckpoint.Path, Time: obs.LatestCheckpoint.Time}
	}
	s.any = s.savepoint.IsSet() || s.checkpoint.IsSet() ||
		obs.Savepoint.Location != "" || obs.LatestSavepoint.Location != "" || obs.LatestCheckpoint.Path != ""

	var youngSP, youngCP RestorePoint
	if s.savepoint.IsSet() && young(s.savepoint, maxAge, now) {
		youngSP = s.savepoint
	}
	if s.checkpoint.IsSet() && young(s.checkpoint, maxAge, now) {
		youngCP = s.checkpoint
	}
	if withCheckpoints {
		s.newest = newer(s.savepoint, s.checkpoint)
		s.chosen = newer(youngSP, youngCP)
	} else {
		s.newest = s.savepoint
		s.chosen = youngSP
		s.skipped = youngCP
	}
}

// statusPoint is the savepoint of the current operation, if it has a
// location and a time.
func statusPoint(st *savepoint.Status) RestorePoint {
	if st.Location == "" {
		return RestorePoint{}
	}
	t := st.TriggerTime
	if t.IsZero() {
		t = st.LastUpdate
	}
	if t.IsZero() {
		return RestorePoint{}
	}
	return RestorePoint{Kind: KindSavepoint, Path: st.Location, Time: t}
}

func recordPoint(r *savepoint.Record) RestorePoint {
	if r.Location == "" || r.Time.IsZero() {
		return RestorePoint{}
	}
	return RestorePoint{Kind: KindSavepoint, Path: r.Location, Time: r.Time}
}

// newer returns the newer of two points (either may be unset); on a tie,
// a.
func newer(a, b RestorePoint) RestorePoint {
	switch {
	case !b.IsSet():
		return a
	case !a.IsSet():
		return b
	case b.Time.After(a.Time):
		return b
	}
	return a
}

// young reports whether r is no older than maxAge at now.
func young(r RestorePoint, maxAge time.Duration, now time.Time) bool {
	return age(r.Time, now) <= maxAge
}
