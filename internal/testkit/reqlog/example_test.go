package reqlog_test

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
)

func Example() {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stop := flinktest.Request{Method: "POST", Path: "/jobs/j1/stop", Body: `{"triggerId":"t1"}`, Time: at}
	reqs := []flinktest.Request{stop, stop} // the first got no answer: the transport sent it again
	sent := reqlog.WithoutReplays(reqs)
	fmt.Println(len(sent), reqlog.BodyOf(sent[0]).TriggerID)
	// Output: 1 t1
}
