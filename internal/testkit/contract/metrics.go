package contract

import (
	"fmt"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// jobRestarts: JobRestarts reads the numRestarts job metric: 0 for the main
// job, which never failed, and a growing count for a job that fails and
// is restarted by its restart strategy in a loop. The metric store is
// filled by Flink's metric fetcher (at most every 10 s by default), so the
// first answers may lack the metric. JobMetrics answers no value for a
// metric the job does not have, and an empty answer for an unknown job.
func (s *suite) jobRestarts(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	var n int64
	s.waitFor(t, ctx, "numRestarts of the main job", func() (bool, string) {
		var ok bool
		var err error
		n, ok, err = s.c.JobRestarts(ctx, s.main.id)
		return err == nil && ok, fmt.Sprintf("%d, %v, %v", n, ok, err)
	})
	if n != 0 {
		t.Errorf("numRestarts of the main job %d, want 0", n)
	}
	m, err := s.c.JobMetrics(ctx, s.main.id, flinkapi.MetricNumRestarts, "noSuchMetric")
	if err != nil || m["noSuchMetric"] != "" || m[flinkapi.MetricNumRestarts] != "0" {
		t.Errorf("JobMetrics with an unknown metric: %v, %v; want numRestarts 0 only", m, err)
	}
	if m, err := s.c.JobMetrics(ctx, flinkapi.NewJobID(), flinkapi.MetricNumRestarts); err != nil || len(m) != 0 {
		t.Errorf("JobMetrics of an unknown job: %v, %v; want an empty answer", m, err)
	}

	s.needJar(t)
	j := s.submit(t, t, ctx, s.c, s.jar, jobSpec{name: "contract-restart-loop", keys: 1, rate: 40, failAt: 10, restartAttempts: 1000})
	s.waitFor(t, ctx, "numRestarts of a job in a restart loop", func() (bool, string) {
		var ok bool
		var err error
		n, ok, err = s.c.JobRestarts(ctx, j.id)
		return err == nil && ok && n >= 2, fmt.Sprintf("%d, %v, %v", n, ok, err)
	})
	t.Logf("numRestarts of the looping job: %d", n)
}
