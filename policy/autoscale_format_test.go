package policy

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
)

// autoscalePolicyV1 is the value of autoscalepolicy-v1.json, every field
// set; like the file, it is never changed.
var autoscalePolicyV1 = AutoscalePolicy{
	FormatVersion: 1, Enabled: true, TargetUtilization: 60, UtilizationBoundary: 15, CatchUpDuration: Duration(10 * time.Minute),
	MinParallelism: 2, MaxParallelism: 32, Window: Duration(3 * time.Minute), Stabilization: Duration(2 * time.Minute),
	CoolDown: Duration(15 * time.Minute),
}

// TestAutoscalePolicyFormat: as TestPolicyFormats, for AutoscalePolicy.
func TestAutoscalePolicyFormat(t *testing.T) {
	formattest.Check(t, policyFormat("AutoscalePolicy", "autoscalepolicy-v1.json", autoscalePolicyV1))
}
