package contract

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLocationPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"file:/tmp/sp/savepoint-1", "/tmp/sp/savepoint-1", true},
		{"file:///tmp/sp/savepoint-1", "/tmp/sp/savepoint-1", true},
		{"file://localhost/tmp/sp", "/tmp/sp", true},
		{"/tmp/sp/", "/tmp/sp", true},
		{"s3://bucket/sp", "", false},
		{"file://host/tmp/sp", "", false},
		{"file:", "", false},
		{"relative/sp", "", false},
	} {
		got, err := LocationPath(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("LocationPath(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		loc, dir string
		want     bool
	}{
		{"file:/tmp/w/savepoints/savepoint-1", "/tmp/w/savepoints", true},
		{"file:/tmp/w/savepoints/savepoint-1", "/tmp/w/savepoints/", true},
		{"file:/tmp/w/savepoints", "/tmp/w/savepoints", false},
		{"file:/tmp/w/savepoints2/x", "/tmp/w/savepoints", false},
		{"file:/tmp/w/savepoints/../x", "/tmp/w/savepoints", false},
		{"s3://b/tmp/w/savepoints/x", "/tmp/w/savepoints", false},
	} {
		if got := under(tc.loc, tc.dir); got != tc.want {
			t.Errorf("under(%q, %q) = %v, want %v", tc.loc, tc.dir, got, tc.want)
		}
	}
}

func TestLocalSavepointExists(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "savepoint-1")
	if err := os.Mkdir(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, err := LocalSavepointExists("file:" + sp); !ok || err != nil {
		t.Errorf("existing savepoint: %v, %v", ok, err)
	}
	if ok, err := LocalSavepointExists("file://" + filepath.Join(dir, "gone")); ok || err != nil {
		t.Errorf("missing savepoint: %v, %v", ok, err)
	}
	if _, err := LocalSavepointExists("s3://bucket/sp"); err == nil {
		t.Error("remote savepoint: no error")
	}
}

func TestWithDefaults(t *testing.T) {
	if _, err := (Target{}).withDefaults(t.TempDir); err == nil || !strings.Contains(err.Error(), "URL, JarPath, EntryClass") {
		t.Errorf("empty target: %v, want the missing fields named", err)
	}
	tg, err := Target{URL: "http://127.0.0.1:1", JarPath: "job.jar", EntryClass: "a.B"}.withDefaults(t.TempDir)
	if err != nil {
		t.Fatal(err)
	}
	if tg.PollInterval != DefaultPollInterval || tg.Timeout != DefaultTimeout || tg.Now == nil || tg.Sleep == nil {
		t.Errorf("defaults not filled in: %+v", tg)
	}
	a, b := tg.OutDir("job"), tg.OutDir("job")
	if a == b || !strings.HasPrefix(filepath.Base(a), "job-") {
		t.Errorf("OutDir gave %q and %q, want two new folders named job-*", a, b)
	}
}

// fakeClock is a clock that moves only when the suite sleeps.
type fakeClock struct {
	now    time.Time
	sleeps int
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.sleeps++
	c.now = c.now.Add(d)
	return nil
}

func TestPollFollowsTheTargetClock(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s := &suite{tg: Target{Now: clk.Now, Sleep: clk.Sleep, PollInterval: time.Second, Timeout: 10 * time.Second}}
	calls := 0
	err := s.poll(context.Background(), func() (bool, string) {
		calls++
		return calls == 4, "not yet"
	})
	if err != nil || calls != 4 || clk.sleeps != 3 {
		t.Errorf("poll: %v after %d calls and %d sleeps, want success after 4 calls and 3 sleeps", err, calls, clk.sleeps)
	}

	clk.sleeps = 0
	err = s.poll(context.Background(), func() (bool, string) { return false, "still running" })
	if err == nil || !strings.Contains(err.Error(), "still running") || clk.sleeps != 10 {
		t.Errorf("poll that never succeeds: %v after %d sleeps, want a timeout naming the last state after 10", err, clk.sleeps)
	}
}

func TestPollEndsWhenTheClockStands(t *testing.T) {
	frozen := time.Unix(1_700_000_000, 0)
	s := &suite{tg: Target{
		Now:          func() time.Time { return frozen },
		Sleep:        func(context.Context, time.Duration) error { return nil },
		PollInterval: time.Second,
		Timeout:      5 * time.Second,
	}}
	calls := 0
	err := s.poll(context.Background(), func() (bool, string) { calls++; return false, "" })
	if err == nil || calls != 6 {
		t.Errorf("poll with a frozen clock: %v after %d calls, want an error after 6", err, calls)
	}
}

func TestPollHonoursTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &suite{tg: Target{Now: time.Now, Sleep: sleep, PollInterval: time.Millisecond, Timeout: time.Hour}}
	err := s.poll(ctx, func() (bool, string) { return false, "waiting" })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("poll with a cancelled context: %v, want context.Canceled", err)
	}
}
