package localcluster_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/localcluster"
)

// A Deployer whose Flink lib folder does not exist refuses to deploy,
// naming the folder; a retry would not help.
func ExampleDeployer_Deploy() {
	d := &localcluster.Deployer{LibDir: "/nonexistent/flink/lib", WorkDir: "/nonexistent/work"}
	req := lifecycle.DeployRequest{
		JobID:      "a0c5cd6a3e7c4e3f8d1b2c3d4e5f6a7b",
		JarFile:    "counter.jar",
		EntryClass: "com.example.Counter",
	}
	_, err := d.Deploy(context.Background(), req)
	fmt.Println(errors.Is(err, lifecycle.ErrDeployRefused))
	fmt.Println(err)
	fmt.Println(localcluster.ClusterName(req.JobID))
	// Output:
	// true
	// lifecycle: deploy refused: localcluster: Flink lib folder /nonexistent/flink/lib: not a folder
	// flinkkit-a0c5cd6a3e7c4e3f8d1b2c3d4e5f6a7b
}
