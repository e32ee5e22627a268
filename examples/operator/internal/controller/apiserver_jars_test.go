package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestAPIServerJarsOutsideTheJarRoot: FlinkJobs naming /etc/passwd,
// /dev/zero, a jar outside the operator's jar root and a symbolic link
// out of it are refused: Ready False with reason InvalidSpec and a message
// naming the file and the root, a Warning event JarRefused, no digest in
// the status, nothing uploaded; a FlinkJob beside them, created after
// them, is deployed meanwhile.
func TestAPIServerJarsOutsideTheJarRoot(t *testing.T) {
	ns := namespace(t)
	srv, flink := realTimeFlink(t)
	startManager(t, managerConfig{ns: ns, flink: flink, recorder: true, concurrent: 2})

	outside := filepath.Join(t.TempDir(), "other-tenant.jar")
	if err := os.WriteFile(outside, append(flinktest.MinimalJar(flinktest.CounterJobClass), []byte("OTHER-TENANT")...), 0o600); err != nil {
		t.Fatal(err)
	}
	linkDir, err := os.MkdirTemp(testJarRoot(), "link-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(linkDir) })
	link := filepath.Join(linkDir, "counter.jar")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{"passwd": "/etc/passwd", "zero": "/dev/zero", "outside": outside, "link": link}
	jobs := map[string]*kubeJob{}
	for name, jar := range refused {
		jobs[name] = createJob(t, ns, name, counterSpec(jar))
	}
	good := createJob(t, ns, "good", counterSpec(counterJar(t)))

	for name, jar := range refused {
		job := jobs[name].wait("refused", func(j *v1alpha1.FlinkJob) bool {
			c := meta.FindStatusCondition(j.Status.Conditions, ConditionReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == lifecycle.ReasonInvalidSpec
		})
		st := &job.Status
		if !strings.Contains(st.Message, jar) || !strings.Contains(st.Message, testJarRoot()) {
			t.Errorf("%s: message %q does not name %s and the root %s", name, st.Message, jar, testJarRoot())
		}
		if st.Target.JarDigest != "" || st.JarDigest != "" || st.Deployed.JarDigest != "" || st.JarID != "" || st.JobID != "" {
			t.Errorf("%s: the status holds something of the jar: %+v", name, st.JobStatus)
		}
	}
	good.wait("running", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.Reason == string(policy.Running) && j.Status.JarDigest != ""
	})

	_, c := kube(t)
	eventually(t, "a JarRefused event for each refused FlinkJob", waitTimeout, func() bool {
		var list eventsv1.EventList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			if e.Reason == ReasonJarRefused && e.Type == "Warning" && strings.Contains(e.Note, refused[e.Regarding.Name]) {
				seen[e.Regarding.Name] = true
			}
		}
		return len(seen) == len(refused)
	})

	uploads := 0
	for _, r := range srv.Requests() {
		if r.Path == "/jars/upload" {
			uploads++
			if strings.Contains(r.Body, "OTHER-TENANT") || strings.Contains(r.Body, "root:") {
				t.Errorf("a refused file was uploaded")
			}
		}
	}
	if uploads != 1 {
		t.Errorf("%d uploads; want the good FlinkJob's only", uploads)
	}
}
