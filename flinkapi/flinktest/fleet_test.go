package flinktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// A cluster of 10,000 running jobs answers the jobs overview and a job's
// details within the client's default timeout, also after the clock moved
// on, which has every job checkpoint.
func TestTenThousandJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 jobs")
	}
	const n = 10_000
	srv, c := runningJobs(t, n) // through a client with the default timeout
	ctx := context.Background()
	srv.Clock().Advance(3 * time.Second)
	jobs, err := c.JobsOverview(ctx)
	if err != nil || len(jobs) != n {
		t.Fatal(len(jobs), err)
	}
	for _, id := range []flinkapi.JobID{jobs[0].ID, jobs[n/2].ID, jobs[n-1].ID} {
		d, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != flinkapi.JobRunning {
			t.Errorf("job %s is %s", id, d.State)
		}
		st, err := c.Checkpoints(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts.Completed < 7 {
			t.Errorf("job %s completed %d checkpoints in 8 s, want one a second", id, st.Counts.Completed)
		}
	}
}

// Jobs writing to one folder write in turn whenever the JobManager is
// asked anything, as before the files were written lazily: a request
// that saw both jobs' latest counts leaves the later job's count, and a
// count the earlier job writes after that replaces it.
func TestSharedFolderWritesInTurn(t *testing.T) {
	f := newFake(t)
	args := func(rate string) []string {
		return []string{"--out", "/shared", "--keys", "1", "--rate", rate, "--checkpoint-interval", "0"}
	}
	// a: tasks up at 0.75 s, an event every second from 1.75 s.
	f.run(flinkapi.RunJarRequest{ProgramArgs: args("1")})
	f.advance(500 * time.Millisecond)
	// b: tasks up at 1.25 s, an event every two seconds from 3.25 s.
	f.run(flinkapi.RunJarRequest{ProgramArgs: args("0.5")})
	f.advance(2800 * time.Millisecond) // 3.3 s: a counted 2, b 1
	if _, err := f.c.JobsOverview(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.advance(700 * time.Millisecond) // 4 s: a counted 3 at 3.75 s, b still 1
	got, err := f.srv.ReadCounts("/shared")
	if err != nil {
		t.Fatal(err)
	}
	if got["key-0"] != 3 {
		t.Errorf("key-0 = %d, want 3, the count a wrote last", got["key-0"])
	}
	f.advance(1500 * time.Millisecond) // 5.5 s: b counted 2 at 5.25 s, a 4 at 4.75 s
	if got, _ = f.srv.ReadCounts("/shared"); got["key-0"] != 2 {
		t.Errorf("key-0 = %d, want 2: b's count, written after a's", got["key-0"])
	}
}
