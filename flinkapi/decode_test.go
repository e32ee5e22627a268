package flinkapi

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The task counts of every recorded answer decode to the counts Flink sent.
func TestTaskCountsOfRealAnswers(t *testing.T) {
	for _, v := range realVersions(t) {
		var ov jobsOverviewOut
		if err := ov.decodeBody([]byte(real(t, v, "jobs_overview.json"))); err != nil || len(ov.jobs) == 0 {
			t.Fatalf("%s: %v", v, err)
		}
		if got := ov.jobs[0].Tasks; got != (TaskCounts{Running: 2, Total: 2}) {
			t.Errorf("%s: overview tasks %+v", v, got)
		}
		var d jobDetailsWire
		if err := json.Unmarshal([]byte(real(t, v, "job_details_failed.json")), &d); err != nil {
			t.Fatal(err)
		}
		det := d.convert()
		if got := det.Vertices[0].Tasks; got != (TaskCounts{Canceled: 1, Total: 1}) {
			t.Errorf("%s: vertex tasks %+v", v, got)
		}
		for _, s := range []JobState{JobInitializing, JobCreated, JobRunning, JobRestarting, JobFailing, JobFailed} {
			if det.Timestamps[s].IsZero() {
				t.Errorf("%s: no timestamp for %s in %v", v, s, det.Timestamps)
			}
		}
		if _, ok := det.Timestamps[JobFinished]; ok {
			t.Errorf("%s: a timestamp for a state the job never entered: %v", v, det.Timestamps)
		}
	}
}

// decodeTasksPlain is encoding/json's own decoding of a tasks object.
func decodeTasksPlain(b []byte) (TaskCounts, error) {
	type plain TaskCounts
	var p plain
	err := json.Unmarshal(b, &p)
	return TaskCounts(p), err
}

// The tasks object's own decoding gives what encoding/json gives, for any
// input: the same counts, or an error where encoding/json has one.
func FuzzTaskCounts(f *testing.F) {
	for _, s := range []string{
		`{"running":2,"canceling":0,"canceled":0,"total":2,"created":0,"scheduled":0,"deploying":0,"reconciling":0,"finished":0,"initializing":0,"failed":0}`,
		`{"CREATED":0,"RUNNING":1,"FINISHED":0}`, `{}`, `null`, ` { "running" : -1 , "x": 3 } `,
		`{"Running":1}`, `{"running":1.0}`, `{"running":"1"}`, `{"running":01}`, `{"run\u006eing":1}`,
		`{"running":99999999999999999999}`, `{"running":1,"running":2}`, `{"a":{"b":1}}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := decodeTasksPlain(b)
		var got taskCountsWire
		gerr := json.Unmarshal(b, &got) // through UnmarshalJSON, as in an answer
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", b, gerr, werr)
		}
		if werr == nil && TaskCounts(got) != want {
			t.Fatalf("%q: %+v, encoding/json's %+v", b, got, want)
		}
	})
}

// The overview's job-by-job decoding gives what json.Unmarshal of the
// whole answer gives.
func FuzzJobsOverview(f *testing.F) {
	for _, v := range []string{"1.20.5", "2.3.0"} {
		f.Add([]byte(real(f, v, "jobs_overview.json")))
	}
	for _, s := range []string{`{"jobs":[]}`, `{"jobs":null}`, `{}`, `{"jobs":[{}],"x":1}`, `{"x":1,"jobs":[{}]}`,
		`{"jobs":[{"jid":"a","name":"\"jid\""}]} x`, `{"jobs":{"not":"a list"}}`, `{"JOBS":[{"jid":"b"}]}`, `{"jobs":[{"tasks":{"running":1}},{"state":3}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var w jobsOverviewWire
		werr := json.Unmarshal(b, &w)
		var o jobsOverviewOut
		gerr := o.decodeBody(b)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", b, gerr, werr)
		}
		if werr != nil {
			return
		}
		want := make([]JobOverview, len(w.Jobs))
		for i := range w.Jobs {
			want[i] = w.Jobs[i].convert()
		}
		if len(want) == 0 && len(o.jobs) == 0 {
			return
		}
		if diff := cmp.Diff(want, o.jobs); diff != "" {
			t.Fatalf("%q: (-json.Unmarshal +decodeBody)\n%s", b, diff)
		}
	})
}
