package lifecycle

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestRecorderRecordsEveryCall calls every method of API through a
// recorder on a cluster that refuses the client's credentials (401), and
// checks that each call's answer is kept as the Step's error: a method
// added to API and not to the recorder fails here.
func TestRecorderRecordsEveryCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":["Unauthorized"]}`))
	}))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	job := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	arg := func(method string, typ reflect.Type) reflect.Value {
		switch typ {
		case reflect.TypeFor[context.Context]():
			return reflect.ValueOf(context.Background())
		case reflect.TypeFor[flinkapi.JobID]():
			return reflect.ValueOf(job)
		case reflect.TypeFor[flinkapi.JarID]():
			return reflect.ValueOf(flinkapi.JarID("5b1d_job.jar"))
		case reflect.TypeFor[flinkapi.Operation]():
			return reflect.ValueOf(flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: flinkapi.NewTriggerID()})
		case reflect.TypeFor[flinkapi.ResourceRequirements]():
			return reflect.ValueOf(flinkapi.ResourceRequirements{"b93d204074064b03a853367828fb3dfe": {LowerBound: 1, UpperBound: 2}})
		case reflect.TypeFor[string]():
			if strings.HasPrefix(method, "Vertex") {
				return reflect.ValueOf("b93d204074064b03a853367828fb3dfe")
			}
			return reflect.ValueOf("job.jar")
		case reflect.TypeFor[io.Reader]():
			return reflect.ValueOf(io.Reader(strings.NewReader("jar")))
		case reflect.TypeFor[int]():
			return reflect.ValueOf(1)
		}
		return reflect.Zero(typ)
	}
	api := reflect.TypeFor[API]()
	for i := range api.NumMethod() {
		m := api.Method(i)
		t.Run(m.Name, func(t *testing.T) {
			s := &sink{}
			fn := reflect.ValueOf(record(c, s)).MethodByName(m.Name)
			args := make([]reflect.Value, fn.Type().NumIn())
			for j := range args {
				args[j] = arg(m.Name, fn.Type().In(j))
			}
			out := fn.Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, flinkapi.ErrMisconfigured) {
				t.Fatalf("%s returned %v, want a 401", m.Name, err)
			}
			if s.err != err {
				t.Errorf("%s: the recorder kept %v", m.Name, s.err)
			}
		})
	}
}

// TestRecorderNested: an operation given a client that records for its
// caller (the Controller's) records in its own sink too, and so does the
// client of a Deployer's cluster that replaces it.
func TestRecorderNested(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	outer, inner := &sink{}, &sink{}
	api := record(record(c, outer), inner)
	if unrecorded(api) != API(c) {
		t.Fatal("unrecorded does not reach the client")
	}
	if _, err := api.ListJobs(context.Background()); !errors.Is(err, flinkapi.ErrMisconfigured) {
		t.Fatalf("ListJobs: %v", err)
	}
	if outer.err == nil || inner.err == nil {
		t.Errorf("recorded: outer %v, inner %v", outer.err, inner.err)
	}
	outer2, inner2 := &sink{}, &sink{}
	other := rewrap(record(record(c, outer2), inner2), c)
	if _, err := other.JobStatus(context.Background(), "a1b2c3d4e5f60718293a4b5c6d7e8f90"); !errors.Is(err, flinkapi.ErrMisconfigured) {
		t.Fatalf("JobStatus: %v", err)
	}
	if outer2.err == nil || inner2.err == nil {
		t.Errorf("rewrapped: outer %v, inner %v", outer2.err, inner2.err)
	}
}
