package flinkfixture

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
)

// Application makes Start start an application cluster instead of a
// session cluster (Config.Application): its JobManager runs flink-container's
// StandaloneApplicationClusterEntryPoint, which runs the job's main method
// at its start and serves that one job; the JobManager and the TaskManager
// both have the job's jar on their classpath. The cluster's configuration
// has execution.shutdown-on-application-finish: false, so its JobManager
// stays after the job ended (FINISHED, CANCELED or FAILED) and answers for
// it until Stop: the job's final state, a stop's result and its checkpoint
// history stay readable. A job whose main method fails (before or while
// it submits) is shown FAILED with its exception
// (execution.submit-failed-job-on-application-error: true), which needs a
// fixed JobID.
//
// The entry point's options are taken the same way by Flink 1.20 and 2.x:
// --job-classname, --job-id, --fromSavepoint and --allowNonRestoredState.
// A restore path or allowNonRestoredState given only in the configuration
// is not enough: the entry point writes its command line's savepoint
// settings into the configuration, and without --allowNonRestoredState it
// sets execution.state-recovery.ignore-unclaimed-state (and the deprecated
// execution.savepoint.ignore-unclaimed-state) to false.
type Application struct {
	// JobClass is the job's main class; default TestJobClass.
	JobClass string
	// JobJar is the job's jar; default the test job jar of the version.
	JobJar string
	// JobID is the job's id (32 hex digits, --job-id). Default: a new
	// random id, which Cluster.Application reports.
	JobID string
	// Args are the job's program arguments.
	Args []string
	// RestorePath is the savepoint or retained checkpoint to start from
	// (--fromSavepoint).
	RestorePath string
	// AllowNonRestoredState is --allowNonRestoredState.
	AllowNonRestoredState bool
}

// Entry point of an application cluster's JobManager (flink-container).
const applicationMainClass = "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint"

// Configuration keys an application cluster needs.
const (
	shutdownOnApplicationFinish = "execution.shutdown-on-application-finish"
	submitFailedJob             = "execution.submit-failed-job-on-application-error"
)

var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// withDefaults fills in the defaults of the version's test job.
func (a Application) withDefaults(testJobJar string) (Application, error) {
	if a.JobClass == "" {
		a.JobClass = TestJobClass
	}
	if a.JobJar == "" {
		a.JobJar = testJobJar
	}
	if _, err := os.Stat(a.JobJar); err != nil {
		return a, fmt.Errorf("flinkfixture: the application's jar: %w", err)
	}
	if a.JobID == "" {
		a.JobID = randomJobID()
	}
	if !jobIDPattern.MatchString(a.JobID) {
		return a, fmt.Errorf("flinkfixture: application job id %q is not 32 lower-case hex digits", a.JobID)
	}
	return a, nil
}

// programArgs is the command line of StandaloneApplicationClusterEntryPoint
// after --configDir: the entry point's options, then "--" and the job's
// arguments (which may look like options of the entry point).
func (a Application) programArgs() []string {
	args := []string{"--job-classname", a.JobClass, "--job-id", a.JobID}
	if a.RestorePath != "" {
		args = append(args, "--fromSavepoint", a.RestorePath)
		if a.AllowNonRestoredState {
			args = append(args, "--allowNonRestoredState")
		}
	}
	if len(a.Args) > 0 {
		args = append(args, "--")
		args = append(args, a.Args...)
	}
	return args
}

// applicationConfig holds the entries an application cluster adds to
// the session cluster's configuration.
func applicationConfig() map[string]string {
	return map[string]string{
		shutdownOnApplicationFinish: "false",
		submitFailedJob:             "true",
	}
}

// randomJobID is a new random job id.
func randomJobID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
