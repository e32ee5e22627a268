package flinkapi_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// exampleJobManager stands in for a Flink 2.3 JobManager with one running
// job whose savepoints take two polls to complete.
func exampleJobManager() *httptest.Server {
	const job = "5e5c6a3b0cf04a1e9f6fb2b2c8d1a0e7"
	var polls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"flink-version":"2.3.0","features":{"web-submit":true}}`)
	})
	mux.HandleFunc("GET /jobs/overview", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"jobs":[{"jid":"%s","name":"orders","state":"RUNNING","start-time":1764669600000,"end-time":-1}]}`, job)
	})
	mux.HandleFunc("POST /jobs/{job}/savepoints", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		_ = jsonDecode(r, &body)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"request-id":"%s"}`, body.TriggerID)
	})
	mux.HandleFunc("GET /jobs/{job}/savepoints/{trigger}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("job") != job {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job %s not found\n\tat org.apache.flink..."]}`, r.PathValue("job"))
			return
		}
		if polls.Add(1) < 3 {
			fmt.Fprint(w, `{"status":{"id":"IN_PROGRESS"},"operation":null}`)
			return
		}
		fmt.Fprint(w, `{"status":{"id":"COMPLETED"},"operation":{"location":"s3://flink/savepoints/savepoint-5e5c6a-0123456789ab"}}`)
	})
	return httptest.NewServer(mux)
}

func Example() {
	jm := exampleJobManager()
	defer jm.Close()
	ctx := context.Background()

	c, err := flinkapi.NewClient(jm.URL, flinkapi.WithTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := c.JobsOverview(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("Flink", v)
	for _, j := range jobs {
		fmt.Println(j.Name, j.State, j.StartTime.Format(time.RFC3339), "ended:", !j.EndTime.IsZero())
	}
	// Output:
	// Flink 2.3.0
	// orders RUNNING 2025-12-02T10:00:00Z ended: false
}

func ExampleNewClient() {
	c, err := flinkapi.NewClient("https://flink.example.com/jobmanager/",
		flinkapi.WithBearerToken("token-from-the-proxy"),
		flinkapi.WithTimeout(5*time.Second),
		flinkapi.WithRetryPolicy(flinkapi.RetryPolicy{MaxAttempts: 4, InitialInterval: 250 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsed: 10 * time.Second}),
	)
	fmt.Println(c.BaseURL(), err)

	_, err = flinkapi.NewClient("http://admin:secret@localhost:8081")
	fmt.Println(err)
	// Output:
	// https://flink.example.com/jobmanager <nil>
	// flinkapi: invalid input: base URL "http://xxxxx@localhost:8081" must not contain credentials; use WithBasicAuth or WithBearerToken
}

func ExampleWaiter_Wait() {
	jm := exampleJobManager()
	defer jm.Close()
	ctx := context.Background()
	c, err := flinkapi.NewClient(jm.URL)
	if err != nil {
		log.Fatal(err)
	}
	job := flinkapi.JobID("5e5c6a3b0cf04a1e9f6fb2b2c8d1a0e7")

	// Choose the trigger id first and store it (for example in a Kubernetes
	// status): after a crash, the same id finds the same savepoint.
	trigger := flinkapi.NewTriggerID()
	op, err := c.TriggerSavepoint(ctx, job, flinkapi.SavepointRequest{TriggerID: trigger, FormatType: flinkapi.FormatCanonical})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same trigger id:", op.TriggerID == trigger)

	w := flinkapi.NewWaiter(c, func(o *flinkapi.WaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 50*time.Millisecond
		o.OnPoll = func(p flinkapi.Poll) {
			if p.Result != nil && !p.Result.Completed() {
				fmt.Println("poll", p.Attempt, p.Result.Status)
			}
		}
	})
	res, err := w.Wait(ctx, op, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("savepoint at", res.Location)
	// Output:
	// same trigger id: true
	// poll 1 IN_PROGRESS
	// poll 2 IN_PROGRESS
	// savepoint at s3://flink/savepoints/savepoint-5e5c6a-0123456789ab
}

func ExampleIsJobNotFound() {
	jm := exampleJobManager()
	defer jm.Close()
	c, _ := flinkapi.NewClient(jm.URL)
	gone := flinkapi.JobID("00000000000000000000000000000001")
	_, err := c.OperationStatus(context.Background(), flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: gone, TriggerID: flinkapi.NewTriggerID()})

	var apiErr *flinkapi.APIError
	fmt.Println(flinkapi.IsJobNotFound(err), flinkapi.IsTriggerNotFound(err), errors.Is(err, flinkapi.ErrNotFound))
	fmt.Println(errors.As(err, &apiErr), apiErr.StatusCode, apiErr.Message())
	fmt.Println(strings.HasPrefix(apiErr.StackTrace, "at org.apache.flink"))
	// Output:
	// true false true
	// true 404 Job 00000000000000000000000000000001 not found
	// true
}
