package flinktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestListStorage: the simulated disk lists a savepoint as a directory
// with its _metadata (written when it completed) and a job's checkpoints
// as <job>/chk-N beside shared/ and taskowned/, in the listed
// directory's form; RemoveStorage removes what lies under a path, which
// then counts as removed.
func TestListStorage(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	f.advance(5 * time.Second)
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(5 * time.Second)
	loc := f.result(op).Location
	sp := f.srv.SavepointDir()
	es := f.srv.ListStorage(sp)
	if len(es) != 1 || !es[0].Dir || "file:"+es[0].Path != loc {
		t.Fatalf("%s lists %+v, want the savepoint %s", sp, es, loc)
	}
	inside := f.srv.ListStorage(loc)
	if len(inside) != 1 || inside[0].Path != loc+"/_metadata" || inside[0].Dir || inside[0].Modified.IsZero() {
		t.Errorf("the savepoint lists %+v, want its _metadata in file: form", inside)
	}
	jobDir := f.srv.CheckpointDir() + "/" + string(id)
	var names []string
	for _, e := range f.srv.ListStorage(jobDir) {
		names = append(names, strings.TrimPrefix(e.Path, jobDir+"/"))
	}
	if n := len(names); n < 3 || !strings.HasPrefix(names[0], "chk-") || names[n-2] != "shared" || names[n-1] != "taskowned" {
		t.Errorf("%s lists %v, want chk-N, shared and taskowned", jobDir, names)
	}
	if n := f.srv.RemoveStorage(loc); n != 1 || len(f.srv.ListStorage(sp)) != 0 {
		t.Errorf("removed %d; %s lists %+v", n, sp, f.srv.ListStorage(sp))
	}
	if ok, _ := f.srv.SavepointExists(loc); ok {
		t.Error("the removed savepoint still exists")
	}
}
