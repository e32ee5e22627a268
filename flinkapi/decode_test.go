package flinkapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
	for _, s := range readerSeeds {
		f.Add([]byte(s))
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

// The one-pass readers take every recorded answer of their endpoint
// themselves, without leaving it to encoding/json, and read what
// encoding/json reads.
func TestFastReadersTakeRealAnswers(t *testing.T) {
	for _, v := range realVersions(t) {
		files, _ := filepath.Glob(filepath.Join("testdata", "real", v, "*.json"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(file)
			switch {
			case strings.HasPrefix(name, "jobs_overview"):
				var w jobsOverviewWire
				if err := json.Unmarshal(b, &w); err != nil {
					t.Fatal(err)
				}
				jobs, ok := readOverview(b)
				if !ok || len(jobs) != len(w.Jobs) || len(jobs) == 0 || jobs[0] != w.Jobs[0].convert() {
					t.Errorf("%s/%s: %v, %+v", v, name, ok, jobs)
				}
			case strings.HasPrefix(name, "job_details"):
				var want, got jobDetailsWire
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
				if !readDetails(b, &got) || len(got.Vertices) == 0 {
					t.Errorf("%s/%s: left to encoding/json", v, name)
				} else if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s/%s: (-json +read)\n%s", v, name, diff)
				}
			case name == "checkpoints.json":
				var want, got checkpointStatisticsWire
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
				if !readCheckpoints(b, &got) || len(got.History) == 0 {
					t.Errorf("%s/%s: left to encoding/json", v, name)
				} else if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s/%s: (-json +read)\n%s", v, name, diff)
				}
			}
		}
	}
}

// readerSeeds are inputs at the edges of what the one-pass readers take.
var readerSeeds = []string{
	`null`, `{}`, ` {} `, `{} x`, `[]`, `{"jobs":[]}`, `{"jobs":null}`, `{"jobs":[null,{}]}`,
	`{"jobs":[{"jid":"a"}],"jobs":[{"name":"b"}]}`, `{"jobs":[{"JID":"a"}]}`, `{"jobs":[{"jid":"a\u0062","name":"\ud800"}]}`,
	"{\"jobs\":[{\"name\":\"caf\xc3\xa9 \xff\"}]}", `{"jobs":[{"start-time":5,"start-time":null}]}`, `{"jobs":[{"duration":1e3}]}`,
	`{"jobs":[{"state":"RUNNING","x":[1,{"y":[true,false,null,-0.5e+3,"\n"]}]}]}`, `{"jobs":[{"tasks":{"running":1},"tasks":null}]}`,
	`{"vertices":[{"id":"v","status":"RUNNING","tasks":{"RUNNING":1}}],"timestamps":{"RUNNING":7,"running":8}}`,
	`{"vertices":[{"parallelism":99999999999999999999}]}`, `{"isStoppable":null,"maxParallelism":-1,"plan":{"nodes":[{"inputs":[]}]}}`,
	`{"latest":{"completed":{"id":1},"completed":{"status":"COMPLETED"},"restored":{"id":2},"restored":null}}`,
	`{"history":[{"savepointFormat":null,"discarded":true,"failure_message":"a\"b"}],"counts":{"total":3}}`,
	`{"jobs":[{"name":"op \u003e \ud83d\ude00 \ud800\u0041 \udc00 \ud800 \/\b\f\n\r\t"}]}`, `{"jobs":[{"state":"RUN\u004eING"}]}`,
	`{"history":[{"id":01}]}`, `{"history":[{"id":-}]}`, `{"latest":{"savepoint":[]}}`, `{"counts":{"Total":1}}`,
}

func addReaderSeeds(f *testing.F) {
	addRealSeeds(f)
	for _, s := range readerSeeds {
		f.Add([]byte(s))
	}
}

// Where readDetails takes an answer, encoding/json decodes it to the same
// wire value, without an error.
func FuzzJobDetails(f *testing.F) {
	addReaderSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var got jobDetailsWire
		if !readDetails(b, &got) {
			return
		}
		var want jobDetailsWire
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: read, but encoding/json: %v", b, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: (-json +read)\n%s", b, diff)
		}
	})
}

// Where readCheckpoints takes an answer, encoding/json decodes it to the
// same wire value, without an error.
func FuzzCheckpoints(f *testing.F) {
	addReaderSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var got checkpointStatisticsWire
		if !readCheckpoints(b, &got) {
			return
		}
		var want checkpointStatisticsWire
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: read, but encoding/json: %v", b, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: (-json +read)\n%s", b, diff)
		}
	})
}
