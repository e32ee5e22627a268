package lifecycle

import (
	"context"
	"fmt"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// stateAPI answers the checkpoint statistics and details of one job.
type stateAPI struct {
	API
	stats      *flinkapi.CheckpointStatistics
	statsErr   error
	details    map[int64]*flinkapi.CheckpointStats
	detailsErr error
}

func (a *stateAPI) Checkpoints(context.Context, flinkapi.JobID) (*flinkapi.CheckpointStatistics, error) {
	return a.stats, a.statsErr
}

func (a *stateAPI) CheckpointDetails(_ context.Context, _ flinkapi.JobID, id int64) (*flinkapi.CheckpointStats, error) {
	if a.detailsErr != nil {
		return nil, a.detailsErr
	}
	if d, ok := a.details[id]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("checkpoint %d: %w", id, flinkapi.ErrNotFound)
}

// TestReadOldState: the snapshot read is the newest completed one, or
// the one restored when it is named; what Flink cannot show is recorded
// as unknown, and an error worth trying again is returned with nothing
// recorded.
func TestReadOldState(t *testing.T) {
	completed := func(id int64, savepoint bool, path string) flinkapi.CheckpointStats {
		return flinkapi.CheckpointStats{ID: id, Status: flinkapi.CheckpointCompleted, IsSavepoint: savepoint, ExternalPath: path}
	}
	cp5, sp6, cp4 := completed(5, false, "file:/cp/chk-5"), completed(6, true, "file:/sp/savepoint-6"), completed(4, false, "file:/cp/chk-4")
	failed7 := flinkapi.CheckpointStats{ID: 7, Status: flinkapi.CheckpointFailed}
	stats := &flinkapi.CheckpointStatistics{LatestCompleted: &cp5, LatestSavepoint: &sp6, History: []flinkapi.CheckpointStats{failed7, sp6, cp5, cp4}}
	details := func(id int64, sizes map[string]int64) *flinkapi.CheckpointStats {
		d := &flinkapi.CheckpointStats{ID: id, Status: flinkapi.CheckpointCompleted, Vertices: map[string]flinkapi.VertexCheckpointStats{}}
		for v, n := range sizes {
			d.Vertices[v] = flinkapi.VertexCheckpointStats{StateSize: n}
		}
		return d
	}
	all := map[int64]*flinkapi.CheckpointStats{4: details(4, map[string]int64{"a": 0}), 6: details(6, map[string]int64{"a": 10, "b": 0})}
	retry := &flinkapi.APIError{StatusCode: 503, Method: "GET", Path: "/jobs/j/checkpoints"}
	for _, tc := range []struct {
		name    string
		api     *stateAPI
		restore string
		want    policy.StateSizes
		wantErr bool
	}{
		{"newest", &stateAPI{stats: stats, details: all}, "", policy.StateSizes{Known: true, CheckpointID: 6, Savepoint: true, Bytes: map[string]int64{"a": 10, "b": 0}}, false},
		{"restored", &stateAPI{stats: stats, details: all}, "file:/cp/chk-4/", policy.StateSizes{Known: true, CheckpointID: 4, Bytes: map[string]int64{"a": 0}}, false},
		{"restored, not in the history", &stateAPI{stats: stats, details: all}, "s3://elsewhere/sp-1", policy.StateSizes{Unknown: policy.StateRestoreNotInHistory}, false},
		{"no snapshot", &stateAPI{stats: &flinkapi.CheckpointStatistics{History: []flinkapi.CheckpointStats{failed7}}}, "", policy.StateSizes{Unknown: policy.StateNoSnapshot}, false},
		{"checkpointing off", &stateAPI{statsErr: fmt.Errorf("404: %w", flinkapi.ErrNotFound)}, "", policy.StateSizes{Unknown: policy.StateNoSnapshot}, false},
		{"statistics refused", &stateAPI{statsErr: fmt.Errorf("401: %w", flinkapi.ErrUnauthorized)}, "", policy.StateSizes{Unknown: policy.StateDetailsUnavailable}, false},
		{"details out of the history", &stateAPI{stats: stats, details: map[int64]*flinkapi.CheckpointStats{}}, "",
			policy.StateSizes{Unknown: policy.StateDetailsUnavailable, CheckpointID: 6, Savepoint: true}, false},
		{"statistics unavailable", &stateAPI{statsErr: retry}, "", policy.StateSizes{}, true},
		{"details unavailable", &stateAPI{stats: stats, detailsErr: retry}, "", policy.StateSizes{CheckpointID: 6, Savepoint: true}, true},
	} {
		pf := &Preflight{}
		var err error
		for range 2 {
			if err = readOldState(context.Background(), tc.api, "j", tc.restore, pf); err != nil || pf.StateRead {
				break
			}
		}
		if (err != nil) != tc.wantErr || pf.StateRead == tc.wantErr {
			t.Errorf("%s: error %v, StateRead %v", tc.name, err, pf.StateRead)
		}
		if fmt.Sprint(pf.State) != fmt.Sprint(tc.want) {
			t.Errorf("%s: state %+v, want %+v", tc.name, pf.State, tc.want)
		}
	}
}
