package lifecycle

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// storedStatus runs one job with a periodic savepoint every 10 minutes
// and the retention given for two days of its Controller's 30 s polls (on
// the fake's clock), and returns its status as stored: its JSON.
func storedStatus(tb testing.TB, retention SavepointPolicy) []byte {
	f := newFleet(tb, 1, 30*time.Second)
	f.specs[0].Savepoints = retention
	f.specs[0].Savepoints.Interval = policy.Duration(10 * time.Minute)
	f.ctrls[0].Shared = nil
	f.converge(tb)
	end := f.srv.Clock().Now().Add(48 * time.Hour)
	for f.srv.Clock().Now().Before(end) {
		res, err := f.ctrls[0].Reconcile(context.Background(), f.specs[0], &f.sts[0])
		if err != nil {
			tb.Fatal(err)
		}
		f.srv.Clock().Advance(max(min(res.RequeueAfter, 30*time.Second), 100*time.Millisecond))
	}
	b, err := json.Marshal(&f.sts[0])
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkStoredStatus reports the bytes of a job's stored status (its
// JSON) after two days of periodic savepoints every 10 minutes, with a
// retention of maxAge 24h and with none, and, as B-<field>, the bytes of
// each top-level field of the status taking 1,000 or more.
func BenchmarkStoredStatus(b *testing.B) {
	for _, c := range []struct {
		name      string
		retention SavepointPolicy
	}{
		{"maxAge=24h", SavepointPolicy{MaxAge: policy.Duration(24 * time.Hour)}},
		{"retention=none", SavepointPolicy{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var st []byte
			for b.Loop() {
				st = storedStatus(b, c.retention)
			}
			b.ReportMetric(float64(len(st)), "status-B")
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(st, &fields); err != nil {
				b.Fatal(err)
			}
			var big []string
			for k, v := range fields {
				if len(v) >= 1000 {
					big = append(big, k)
				}
			}
			sort.Strings(big)
			for _, k := range big {
				b.ReportMetric(float64(len(fields[k])), "B-"+k)
			}
			b.Logf("%s: %d bytes; %s", c.name, len(st), strings.Join(big, ", "))
		})
	}
}
