package fleet

import (
	"sort"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// ApplicationResult is what the last calls of an application's
// deployments said, as one verdict.
type ApplicationResult struct {
	Name string
	// Verdict is the application's verdict: the first of Invalid,
	// Failed, Blocked, Waiting, Progressing that one of its deployments
	// has; Done once all are Done; Deleted once all were deleted.
	Verdict lifecycle.Verdict
	// Deployments are the application's deployments, by name, with
	// their own results.
	Deployments []Result
}

// applicationOrder is the order in which the verdicts of an
// application's deployments make its own: the first one that any has.
var applicationOrder = []lifecycle.Verdict{lifecycle.VerdictInvalid, lifecycle.VerdictFailed, lifecycle.VerdictBlocked,
	lifecycle.VerdictWaiting, lifecycle.VerdictProgressing, lifecycle.VerdictDone, lifecycle.VerdictDeleted}

// Applications returns the result of every application of the
// deployments the Runner knows (Deployment.Application), ordered by
// name.
func (r *Runner) Applications() []ApplicationResult {
	byName := map[string]*ApplicationResult{}
	for _, res := range r.Results() {
		if res.Application == "" {
			continue
		}
		a, ok := byName[res.Application]
		if !ok {
			a = &ApplicationResult{Name: res.Application}
			byName[res.Application] = a
		}
		a.Deployments = append(a.Deployments, res)
	}
	out := make([]ApplicationResult, 0, len(byName))
	for _, a := range byName {
		a.Verdict = applicationVerdict(a.Deployments)
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// applicationVerdict is the verdict of an application of the given
// deployments' results.
func applicationVerdict(results []Result) lifecycle.Verdict {
	has := map[lifecycle.Verdict]bool{}
	for _, res := range results {
		v := res.Verdict
		switch {
		case res.Deleted:
			v = lifecycle.VerdictDeleted
		case v == "" || res.Err != nil && v == lifecycle.VerdictDone:
			// Not called yet, or its last call failed: not done.
			v = lifecycle.VerdictProgressing
		}
		has[v] = true
	}
	for _, v := range applicationOrder {
		if has[v] {
			return v
		}
	}
	return lifecycle.VerdictProgressing
}
