package main

import (
	"context"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/wait"
)

// showRestored prints what Flink says job was restored from, and how the
// counts carry on in it: previous had counted before events (0: unknown,
// as on a real cluster whose TaskManager writes elsewhere), and job writes
// its counts to the folder of name.
func showRestored(ctx context.Context, cl *demo.Cluster, job flinkapi.JobID, previous string, before int64, name, want string, out *demo.Printer) error {
	start := time.Now()
	if err := cl.WaitTasks(ctx, job, time.Minute, func(d time.Duration) {
		out.Progress("restored", fmt.Sprintf("job %s is RUNNING; waiting for its tasks to run", demo.Short(job)), d)
	}); err != nil {
		return fmt.Errorf("restored: %w", err)
	}
	rc, err := cl.WaitRestored(ctx, job, time.Minute)
	if err != nil {
		return fmt.Errorf("restored: %w", err)
	}
	note := ""
	if !demo.SameLocation(rc.ExternalPath, want) {
		note = fmt.Sprintf(" (not %s, the one the status names)", want)
	}
	counts := ""
	if before > 0 {
		// The job writes its counts once it counted an event; let it
		// count on for a second.
		var first int64
		var seen time.Time
		for deadline := time.Now().Add(10 * time.Second); counts == "" && time.Now().Before(deadline); time.Sleep(cl.Timing.Poll) {
			now, ok := cl.Events(name)
			switch {
			case !ok:
			case seen.IsZero():
				first, seen = now, time.Now()
			case now > first && time.Since(seen) >= time.Second:
				counts = fmt.Sprintf("; %s had counted %d events, job %s is at %d", previous, before, demo.Short(job), now)
			}
		}
	}
	out.Phase("restored", "Flink reports job %s restored from %s%s after %s%s", demo.Short(job), rc.ExternalPath, note,
		demo.Seconds(time.Since(start)), counts)
	return nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }
