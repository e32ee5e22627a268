package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flinkkit/flinkkit/internal/flinkjvm"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// Entry points of the two processes of a cluster.
const (
	jobManagerClass  = "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint"
	taskManagerClass = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
)

// SubmitFailedJob is the Flink setting, true in every cluster unless the
// Deployer's Configuration says otherwise, that shows a job whose main
// method failed as FAILED with its exception, instead of ending the
// application without a job.
const SubmitFailedJob = "execution.submit-failed-job-on-application-error"

// layout is the folder of one cluster.
type layout struct {
	Dir, Conf, Logs, Tmp, Plugins string
}

func newLayout(dir string) layout {
	return layout{
		Dir:     dir,
		Conf:    filepath.Join(dir, "conf"),
		Logs:    filepath.Join(dir, "logs"),
		Tmp:     filepath.Join(dir, "tmp"),
		Plugins: filepath.Join(dir, "plugins"),
	}
}

func (l layout) dirs() []string { return []string{l.Conf, l.Logs, l.Tmp, l.Plugins} }

// ports are the JobManager's ports on 127.0.0.1.
type ports struct {
	REST, RPC, Blob int
}

// Memory of the two JVMs, in MiB: a JobManager of about 768 MiB and a
// TaskManager of about 1 GiB, the sizes of flinkkit's test clusters.
var memoryConfig = map[string]string{
	"jobmanager.memory.heap.size":                "384m",
	"jobmanager.memory.off-heap.size":            "128m",
	"jobmanager.memory.jvm-metaspace.size":       "192m",
	"jobmanager.memory.jvm-overhead.min":         "64m",
	"jobmanager.memory.jvm-overhead.max":         "64m",
	"jobmanager.memory.flink.size":               "512m",
	"jobmanager.memory.process.size":             "768m",
	"taskmanager.memory.framework.heap.size":     "128m",
	"taskmanager.memory.task.heap.size":          "256m",
	"taskmanager.memory.framework.off-heap.size": "128m",
	"taskmanager.memory.task.off-heap.size":      "0m",
	"taskmanager.memory.network.min":             "64m",
	"taskmanager.memory.network.max":             "64m",
	"taskmanager.memory.managed.size":            "128m",
	"taskmanager.memory.jvm-metaspace.size":      "192m",
	"taskmanager.memory.jvm-overhead.min":        "128m",
	"taskmanager.memory.jvm-overhead.max":        "128m",
	"taskmanager.memory.flink.size":              "704m",
	"taskmanager.memory.process.size":            "1024m",
}

// The JVM flags matching memoryConfig (Flink's scripts derive them from it).
var (
	jobManagerMemoryFlags  = []string{"-Xms384m", "-Xmx384m", "-XX:MaxDirectMemorySize=128m", "-XX:MaxMetaspaceSize=192m"}
	taskManagerMemoryFlags = []string{"-Xms384m", "-Xmx384m", "-XX:MaxDirectMemorySize=192m", "-XX:MaxMetaspaceSize=192m"}
)

// fileURI turns an absolute local path into a file:// URI for Flink.
func fileURI(path string) string { return "file://" + filepath.ToSlash(path) }

// flinkConfiguration is the config.yaml of a cluster: the Deployer's
// defaults, then its Configuration, then the request's application
// configuration (lifecycle.ApplicationConfiguration), which wins.
func (d *Deployer) flinkConfiguration(l layout, p ports, slots int, req lifecycle.DeployRequest) map[string]string {
	c := map[string]string{
		"jobmanager.rpc.address":        "127.0.0.1",
		"jobmanager.rpc.port":           strconv.Itoa(p.RPC),
		"jobmanager.bind-host":          "127.0.0.1",
		"taskmanager.host":              "127.0.0.1",
		"taskmanager.bind-host":         "127.0.0.1",
		"rest.address":                  "127.0.0.1",
		"rest.bind-address":             "127.0.0.1",
		"rest.port":                     strconv.Itoa(p.REST),
		"blob.server.port":              strconv.Itoa(p.Blob),
		"high-availability.type":        "NONE",
		"taskmanager.numberOfTaskSlots": strconv.Itoa(slots),
		"taskmanager.cpu.cores":         strconv.Itoa(slots), // required without Flink's scripts
		"parallelism.default":           "1",

		"execution.checkpointing.dir":           fileURI(d.checkpointDir()),
		"execution.checkpointing.savepoint-dir": fileURI(d.savepointDir()),

		"io.tmp.dirs":            l.Tmp,
		"blob.storage.directory": filepath.Join(l.Tmp, "blob"),
		"web.tmpdir":             filepath.Join(l.Tmp, "web"),

		SubmitFailedJob: "true",
	}
	for k, v := range memoryConfig {
		c[k] = v
	}
	if req.Parallelism > 0 {
		c["parallelism.default"] = strconv.Itoa(req.Parallelism)
	}
	for k, v := range d.Configuration {
		c[k] = v
	}
	for k, v := range lifecycle.ApplicationConfiguration(req) {
		c[k] = v
	}
	return c
}

// slots is the TaskManager's number of slots for req.
func (d *Deployer) slots(req lifecycle.DeployRequest) int {
	if d.Slots > 0 {
		return d.Slots
	}
	return max(req.Parallelism, 1)
}

// jvmCommand is the java command line of one process of the cluster in l.
// The marker system properties let the Deployer find the processes again
// from their command lines alone.
func (d *Deployer) jvmCommand(java string, l layout, role string, req lifecycle.DeployRequest) []string {
	memFlags, mainClass := jobManagerMemoryFlags, jobManagerClass
	if role == roleTaskManager {
		memFlags, mainClass = taskManagerMemoryFlags, taskManagerClass
	}
	args := []string{java}
	args = append(args, memFlags...)
	args = append(args, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
	args = append(args, flinkjvm.ModuleFlags...)
	args = append(args,
		"-Djava.io.tmpdir="+l.Tmp,
		"-Dlog.file="+filepath.Join(l.Logs, role+".log"),
		"-Dlog4j.configurationFile=file:"+filepath.Join(l.Conf, "log4j.properties"),
		markerProperty+l.Dir,
		roleProperty+role,
		"-classpath", strings.Join([]string{filepath.Join(d.LibDir, "*"), req.JarFile}, string(filepath.ListSeparator)),
		mainClass,
		"--configDir", l.Conf,
	)
	if role == roleTaskManager {
		return append(args, "-D", "taskmanager.resource-id="+filepath.Base(l.Dir)+"-tm")
	}
	args = append(args, "--job-classname", req.EntryClass, "--job-id", string(req.JobID))
	if req.RestorePath != "" {
		// On the command line: the entry point writes its command line's
		// savepoint settings over the configuration's (an absent
		// --allowNonRestoredState sets ignore-unclaimed-state to false).
		args = append(args, "--fromSavepoint", req.RestorePath)
		if req.AllowNonRestoredState {
			args = append(args, "--allowNonRestoredState")
		}
	}
	if len(req.Args) > 0 {
		args = append(args, "--")
		args = append(args, req.Args...)
	}
	return args
}

// Marker system properties on every process's command line.
const (
	markerProperty = "-Dflinkkit.localcluster="
	roleProperty   = "-Dflinkkit.role="
)

// Roles of the processes.
const (
	roleJobManager  = "jobmanager"
	roleTaskManager = "taskmanager"
)

// writeConf writes conf/config.yaml and conf/log4j.properties.
func writeConf(l layout, conf map[string]string) error {
	if err := os.WriteFile(filepath.Join(l.Conf, "config.yaml"), flinkjvm.RenderYAML("Written by flinkkit's localcluster.", conf), 0o644); err != nil {
		return fmt.Errorf("localcluster: write the configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(l.Conf, "log4j.properties"), []byte(flinkjvm.Log4jConfig), 0o644); err != nil {
		return fmt.Errorf("localcluster: write the log configuration: %w", err)
	}
	return nil
}
