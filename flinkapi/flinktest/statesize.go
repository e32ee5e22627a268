package flinktest

import (
	"fmt"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// SetVertexStateSize sets the state size, in bytes, that the job's vertex
// holds in the checkpoints and savepoints that complete from now on (the
// per-vertex "state_size" of GET /jobs/:jobid/checkpoints/details/:id,
// and their sum, the checkpoint's), in place of the simulated job's own
// (the source's position, 265 bytes, and the counter's counts). A
// snapshot whose counter holds no state can be restored by a job whose
// counter has another uid without allowNonRestoredState, as in Flink,
// which skips an operator without state. It returns an error for an
// unknown job, a vertex the job does not have, or a negative size.
func (s *Server) SetVertexStateSize(id flinkapi.JobID, vertex string, bytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.cl.job(id)
	switch {
	case j == nil:
		return fmt.Errorf("flinktest: SetVertexStateSize: no job %s", id)
	case vertex != sourceVertexID && vertex != j.spec.counterID():
		return fmt.Errorf("flinktest: SetVertexStateSize: job %s has no vertex %q (it has %s and %s)", id, vertex, sourceVertexID, j.spec.counterID())
	case bytes < 0:
		return fmt.Errorf("flinktest: SetVertexStateSize: negative size %d", bytes)
	}
	if j.stateBytes == nil {
		j.stateBytes = map[string]int64{}
	}
	j.stateBytes[vertex] = bytes
	return nil
}
