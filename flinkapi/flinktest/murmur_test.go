package flinktest

import "testing"

// TestVertexIDOfUID: the ids real Flink gave the test job's uids.
func TestVertexIDOfUID(t *testing.T) {
	for uid, want := range map[string]string{
		"flinkkit-key-source": sourceVertexID,
		"flinkkit-counter":    counterVertexID,
	} {
		if got := vertexIDOfUID(uid); got != want {
			t.Errorf("vertexIDOfUID(%q) = %s, want %s", uid, got, want)
		}
	}
	if vertexIDOfUID("flinkkit-counter-v2") == counterVertexID || len(vertexIDOfUID("a-uid-longer-than-sixteen-bytes")) != 32 {
		t.Error("another uid gives the same id, or an id of the wrong length")
	}
}
