package lifecycle

import (
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// liveJobs lists the jobs of the JobManager that have not ended.
func liveJobs(srv *flinktest.Server) []flinktest.JobInfo {
	var out []flinktest.JobInfo
	for _, j := range srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j)
		}
	}
	return out
}

// runsOf counts the jar runs sent for job id, answered or not.
func runsOf(srv *flinktest.Server, id flinkapi.JobID) (sent int) {
	for _, r := range srv.Requests() {
		if r.Route == "POST /jars/:jarid/run" && strings.Contains(r.Body, string(id)) {
			sent++
		}
	}
	return sent
}

// TestControllerFailover23: on Flink 2.3 with high availability the
// JobManager recovers and executes again by itself the applications that
// had not ended. The Controller meets a failover right after its submit
// (the answer lost, the job recovered by Flink) and one during an
// upgrade's stop (the old job recovered, running again): never two live
// jobs, and never a second submit of a job Flink already runs.
func TestControllerFailover23(t *testing.T) {
	ha := flinktest.RestartOptions{HA: true}
	for _, tc := range []struct {
		name    string
		upgrade bool
		fault   flinktest.Fault
	}{
		{"deploy: after the submit", false, flinktest.Fault{Kind: flinktest.FaultRestart, Route: "POST /jars/:jarid/run", After: true, Times: 1, Restart: ha}},
		{"upgrade: after the submit", true, flinktest.Fault{Kind: flinktest.FaultRestart, Route: "POST /jars/:jarid/run", After: true, Times: 1, Restart: ha}},
		{"upgrade: during the stop", true, flinktest.Fault{Kind: flinktest.FaultRestart, Route: "POST /jobs/:jobid/stop", After: true, Times: 1, Restart: ha}},
		{"upgrade: during the stop's polls", true, flinktest.Fault{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", After: true, Times: 1, Restart: ha}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, false, flinktest.WithVersion("2.3.0"))
			spec := k.spec("/out")
			if tc.upgrade {
				k.settle("deploy", spec)
				spec = k.spec("/out", "--rate", "20")
			}
			if err := k.srv.Inject(tc.fault); err != nil {
				t.Fatal(err)
			}
			seen := map[flinkapi.JobID]bool{}
			check := func() {
				t.Helper()
				live := liveJobs(k.srv)
				if len(live) > 1 {
					t.Fatalf("%d live jobs: %+v (status %+v)", len(live), live, k.st)
				}
				for _, j := range live {
					seen[j.ID] = true
				}
			}
			k.call(spec, false)
			check()
			for range 300 {
				if !k.st.InFlight() && k.st.State == policy.Running && k.st.Deployed.equal(spec.Job) {
					break
				}
				k.call(spec, false)
				check()
			}
			if k.st.InFlight() || k.st.State != policy.Running || !k.st.Deployed.equal(spec.Job) {
				t.Fatalf("not settled: %+v", k.st)
			}
			hit := false
			for _, r := range k.srv.Requests() {
				if r.Fault != "" && r.Route == tc.fault.Route {
					hit = true
				}
			}
			if !hit {
				t.Fatal("the failover never happened: the test shows nothing")
			}
			live := liveJobs(k.srv)
			if len(live) != 1 || live[0].ID != k.st.JobID {
				t.Fatalf("live jobs %+v, want only the deployment's %s", live, k.st.JobID)
			}
			if n := runsOf(k.srv, k.st.JobID); n != 1 {
				t.Errorf("%d jar runs for job %s, want 1: Flink recovered the job the first one submitted", n, k.st.JobID)
			}
			if live[0].Application != flinkapi.ApplicationID(live[0].ID) {
				t.Errorf("the job's application %q, want its SingleJobApplication %s", live[0].Application, live[0].ID)
			}
		})
	}
}
