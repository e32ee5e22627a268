package flinkapi

import (
	"context"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// TestJobDetailsApplicationID: the job's application id is read from
// "application-id" where Flink sends one, left empty where it is null or
// missing, by the fast reader and by encoding/json alike.
func TestJobDetailsApplicationID(t *testing.T) {
	ctx := context.Background()
	base := `{"jid":"` + string(testJob) + `","name":"n","state":"RUNNING","vertices":[]%s}`
	for _, tc := range []struct {
		name, extra string
		want        ApplicationID
	}{
		{"present", `,"application-id":"` + string(testApp) + `"`, testApp},
		{"null", `,"application-id":null`, ""},
		{"absent", ``, ""},
		// A second "vertices" makes the fast reader give up: the fallback
		// decodes the id as well.
		{"fallback", `,"application-id":"` + string(testApp) + `","vertices":[]`, testApp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "2.3.0")
			body := strings.Replace(base, "%s", tc.extra, 1)
			mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob), httpmock.NewStringResponder(200, body))
			d, err := c.Job(ctx, testJob)
			if err != nil {
				t.Fatal(err)
			}
			if d.ApplicationID != tc.want {
				t.Errorf("application id %q, want %q", d.ApplicationID, tc.want)
			}
			var w jobDetailsWire
			if err := w.decodeBody([]byte(body)); err != nil || w.ApplicationID != tc.want {
				t.Errorf("decodeBody: %q, %v; want %q", w.ApplicationID, err, tc.want)
			}
		})
	}
}

// TestRunJarIDs: the jar run's applicationId is returned where Flink sends
// it, empty where it does not, and a malformed one is refused.
func TestRunJarIDs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, version, answer string
		want                  ApplicationID
		fails                 bool
	}{
		{"2.3", "2.3.0", `{"jobid":"` + string(testJob) + `","applicationId":"` + strings.ToUpper(string(testApp)) + `"}`, testApp, false},
		{"1.20", "1.20.5", `{"jobid":"` + string(testJob) + `"}`, "", false},
		{"malformed", "2.3.0", `{"jobid":"` + string(testJob) + `","applicationId":"xyz"}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, tc.version)
			mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run", httpmock.NewStringResponder(200, tc.answer))
			id, app, err := c.RunJarIDs(ctx, testJar, RunJarRequest{})
			if tc.fails {
				if err == nil {
					t.Fatalf("a malformed application id was accepted: %q", app)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id != testJob || app != tc.want {
				t.Errorf("RunJarIDs: %q, %q; want %q, %q", id, app, testJob, tc.want)
			}
		})
	}
}
