package reqlog

import (
	"encoding/json"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// WithoutReplays returns reqs without the transport's replays: Go's HTTP
// transport sends an idempotent request once more, at once, when the
// reused connection it went out on broke (same method, path, body and
// time as the one before, which got no answer); whether the connection
// was reused is up to timing, not to the operation, so such replays are
// left out.
func WithoutReplays(reqs []flinktest.Request) []flinktest.Request {
	out := make([]flinktest.Request, 0, len(reqs))
	var prev flinktest.Request
	for i, r := range reqs {
		replay := i > 0 && prev.Status == 0 && r.Method == prev.Method && r.Path == prev.Path && r.Body == prev.Body && r.Time.Equal(prev.Time)
		prev = r
		if !replay {
			out = append(out, r)
		}
	}
	return out
}

// Body holds the fields of request bodies the checks read.
type Body struct {
	TriggerID     string `json:"triggerId"`
	JobID         string `json:"jobId"`
	SavepointPath string `json:"savepointPath"`
	CancelJob     bool   `json:"cancel-job"`
}

// BodyOf decodes the fields of r's body that Body holds; a body that is
// not JSON gives the zero Body.
func BodyOf(r flinktest.Request) Body {
	var b Body
	_ = json.Unmarshal([]byte(r.Body), &b)
	return b
}

// JarUploads counts the jar uploads (POST /jars/upload) in reqs, each
// one received, whatever its answer.
func JarUploads(reqs []flinktest.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Method == "POST" && r.Path == "/jars/upload" {
			n++
		}
	}
	return n
}
