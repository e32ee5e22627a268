package faultmatrix

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seedFlag      = flag.Int64("seed", 0, "run only the generated schedule of this seed (TestSchedules)")
	schedulesFlag = flag.Int("schedules", -1, "number of generated schedules TestSchedules runs (seeds 1 to N; default 250, 1000 with FLINKKIT_FULL=1)")
	updateFlag    = flag.Bool("update", false, "write the fault-matrix tables into ../../../docs/guarantees.md")
)

const readme = "../../../docs/guarantees.md"

// runBoth runs s uninterrupted and resumed after every step, and returns
// the uninterrupted run with the violations of both and their comparison.
func runBoth(t *testing.T, s Schedule) (*Result, []string) {
	t.Helper()
	ctx := context.Background()
	run, err := Execute(ctx, s, false)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := Execute(ctx, s, true)
	if err != nil {
		t.Fatal(err)
	}
	var v []string
	v = append(v, run.Violations...)
	for _, m := range resumed.Violations {
		v = append(v, "resumed: "+m)
	}
	v = append(v, Compare(run, resumed)...)
	return run, v
}

func report(t *testing.T, s Schedule, r *Result, v []string, repro string) {
	t.Helper()
	if len(v) == 0 {
		return
	}
	t.Errorf("%s\nbroke %d invariant(s):\n  %s\noutcome %s after %d steps, %v on the clock\nrequests: %s\nreproduce: %s",
		s, len(v), strings.Join(v, "\n  "), r.Outcome, r.Steps, r.Elapsed, strings.Join(r.Routes, ", "), repro)
}

// TestMatrix runs every operation under every fault class, checks the
// invariants, and checks that the table of docs/guarantees.md is what this run
// generates (-update writes it).
func TestMatrix(t *testing.T) {
	var names []string
	for _, c := range Classes {
		names = append(names, c.Name)
	}
	table := NewTable(names, Ops)
	var mu sync.Mutex
	ran := 0
	t.Run("cells", func(t *testing.T) {
		for _, c := range Classes {
			for _, op := range Ops {
				s := MatrixSchedule(c, op)
				t.Run(c.Name+"/"+string(op), func(t *testing.T) {
					t.Parallel()
					r, v := runBoth(t, s)
					repro := fmt.Sprintf("go test ./internal/testkit/faultmatrix -run 'TestMatrix/cells/%s/%s$' -v", subtestName(c.Name), op)
					report(t, s, r, v, repro)
					mu.Lock()
					defer mu.Unlock()
					table.Set(c.Name, op, Cell{Outcome: r.Outcome, Held: len(v) == 0})
					ran++
				})
			}
		}
	})
	if ran != len(Classes)*len(Ops) {
		t.Logf("%d of %d cells ran; the table of docs/guarantees.md is not checked", ran, len(Classes)*len(Ops))
		return
	}
	got := table.Markdown()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if *updateFlag {
		out, err := Replace(string(doc), got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(readme, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the table into %s", readme)
		return
	}
	want, err := Generated(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if want != got {
		t.Errorf("the fault-matrix table of docs/guarantees.md differs from what the suite generates; run\n  go test ./internal/testkit/faultmatrix -run TestMatrix -update\ngenerated:\n%s\nREADME:\n%s", got, want)
	}
}

// subtestName is name as go test names a subtest.
func subtestName(name string) string { return strings.ReplaceAll(name, " ", "_") }

// TestSchedules runs randomised fault schedules from fixed seeds: seeds 1
// to -schedules, or only -seed.
func TestSchedules(t *testing.T) {
	outcomes := map[string]int{}
	failed := 0
	n := runSeeds(t, sized(*schedulesFlag, 250, 1000), Generate, "TestSchedules", func(s Schedule, r *Result, v []string) {
		outcomes[string(r.Schedule.Op)+" "+r.Outcome]++
		if len(v) > 0 {
			failed++
		}
	})
	byOutcome := map[string]int{}
	for k, n := range outcomes {
		byOutcome[k[strings.Index(k, " ")+1:]] += n
	}
	t.Logf("%d schedules run, %d broke an invariant; outcomes: %s", n, failed, Summary(byOutcome))
	if testing.Verbose() {
		t.Logf("by operation: %s", Summary(outcomes))
	}
}

// runSeeds runs the schedules generate draws from seeds 1 to n (or only
// -seed) in parallel, uninterrupted and resumed, reports each one that
// broke an invariant with the command that replays it (-run test), and
// calls tally, one call at a time, with each. It returns how many ran.
func runSeeds(t *testing.T, n int, generate func(int64) Schedule, test string, tally func(Schedule, *Result, []string)) int {
	seeds := make([]int64, 0, n)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		for i := 1; i <= n; i++ {
			seeds = append(seeds, int64(i))
		}
	}
	var mu sync.Mutex
	t.Run("seeds", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				s := generate(seed)
				r, v := runBoth(t, s)
				if testing.Verbose() && len(seeds) == 1 {
					t.Logf("%s\noutcome %s after %d steps, %v on the clock; violations %v\nrequests: %s", s, r.Outcome, r.Steps, r.Elapsed, v, strings.Join(r.Routes, ", "))
				}
				report(t, s, r, v, fmt.Sprintf("go test ./internal/testkit/faultmatrix -run %s -seed=%d -v", test, seed))
				mu.Lock()
				defer mu.Unlock()
				tally(s, r, v)
			})
		}
	})
	return len(seeds)
}

var crashesFlag = flag.Int("crashes", -1, "number of crash-and-absence schedules TestCrashAndAbsence runs (seeds 1 to N; default 250, 1000 with FLINKKIT_FULL=1)")

// TestCrashAndAbsence runs seeded schedules in which the caller of an
// Upgrade (savepoint and last-state), a Restart or a Teardown crashes
// after random steps, losing the step's answer or not, and comes back
// after 0 to 10 minutes on the fake's clock (Flink forgets trigger ids
// after 5) with a new operation and the Progress it stored. Every
// invariant is checked; the log counts the runs that stopped or cancelled
// the job without a recorded restore point, had two live jobs, or got
// stuck (all must be 0).
func TestCrashAndAbsence(t *testing.T) {
	outcomes := map[string]int{}
	var lost, twoJobs, stuck, broken, lostAnswers, absentPastStore int
	n := runSeeds(t, sized(*crashesFlag, 250, 1000), GenerateCrashes, "TestCrashAndAbsence", func(s Schedule, r *Result, v []string) {
		outcomes[string(s.Op)+" "+r.Outcome]++
		for _, ev := range s.Events {
			if ev.LoseAnswer {
				lostAnswers++
			}
			if ev.Away > 5*time.Minute {
				absentPastStore++
			}
		}
		if len(v) > 0 {
			broken++
		}
		joined := strings.Join(v, "\n")
		if strings.Contains(joined, "invariant 1:") {
			lost++
		}
		if strings.Contains(joined, "two jobs of the deployment run at once") {
			twoJobs++
		}
		if strings.Contains(joined, "invariant 4:") {
			stuck++
		}
	})
	t.Logf("%d crash-and-absence runs (%d answers lost, %d absences past the 5-minute store duration): %d broke an invariant; "+
		"%d stopped or cancelled the job without a recorded restore point, %d had two live jobs, %d got stuck; outcomes: %s",
		n, lostAnswers, absentPastStore, broken, lost, twoJobs, stuck, Summary(outcomes))
}
