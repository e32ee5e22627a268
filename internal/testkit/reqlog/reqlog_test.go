package reqlog

import (
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// JarUploads counts the uploads the fake received, not the other
// requests about jars: the listing, a run, a deletion.
func TestJarUploads(t *testing.T) {
	reqs := []flinktest.Request{
		{Method: "GET", Path: "/jars"},
		{Method: "POST", Path: "/jars/upload", Status: 200},
		{Method: "POST", Path: "/jars/abc_job.jar/run", Status: 200},
		{Method: "DELETE", Path: "/jars/abc_job.jar", Status: 200},
		{Method: "POST", Path: "/jars/upload"}, // no answer: still sent
		{Method: "GET", Path: "/jars/upload"},
	}
	if n := JarUploads(reqs); n != 2 {
		t.Fatalf("JarUploads = %d, want 2", n)
	}
	if n := JarUploads(nil); n != 0 {
		t.Fatalf("JarUploads(nil) = %d, want 0", n)
	}
}
