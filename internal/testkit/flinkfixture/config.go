package flinkfixture

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flinkkit/flinkkit/internal/flinkjvm"
)

// Ports are the fixed TCP ports of one cluster's JobManager, all on
// 127.0.0.1. They stay the same across RestartJobManager, so the REST URL
// and the TaskManager's connection target do not change. The TaskManager's
// own RPC and data ports are picked anew each time it starts.
type Ports struct {
	REST          int
	JobManagerRPC int
	Blob          int
}

// Memory sizes are in MiB. The TaskManager is started without Flink's shell
// scripts, so every component that TaskManagerRunner insists on is set
// explicitly and the JVM limits are derived from the same numbers, the way
// Flink's BashJavaUtils would.

// jobManagerMemory is the JobManager's memory model (about 768 MiB process).
type jobManagerMemory struct {
	Heap, OffHeap, Metaspace, Overhead int
}

func (m jobManagerMemory) flinkMiB() int   { return m.Heap + m.OffHeap }
func (m jobManagerMemory) processMiB() int { return m.flinkMiB() + m.Metaspace + m.Overhead }

func (m jobManagerMemory) config() map[string]string {
	return map[string]string{
		"jobmanager.memory.heap.size":          mib(m.Heap),
		"jobmanager.memory.off-heap.size":      mib(m.OffHeap),
		"jobmanager.memory.jvm-metaspace.size": mib(m.Metaspace),
		"jobmanager.memory.jvm-overhead.min":   mib(m.Overhead),
		"jobmanager.memory.jvm-overhead.max":   mib(m.Overhead),
		"jobmanager.memory.flink.size":         mib(m.flinkMiB()),
		"jobmanager.memory.process.size":       mib(m.processMiB()),
	}
}

func (m jobManagerMemory) jvmArgs() []string {
	return []string{
		"-Xms" + mib(m.Heap),
		"-Xmx" + mib(m.Heap),
		"-XX:MaxDirectMemorySize=" + mib(m.OffHeap),
		"-XX:MaxMetaspaceSize=" + mib(m.Metaspace),
	}
}

// taskManagerMemory is the TaskManager's memory model (about 1 GiB process).
type taskManagerMemory struct {
	FrameworkHeap, TaskHeap       int
	FrameworkOffHeap, TaskOffHeap int
	Network, Managed              int
	Metaspace, Overhead           int
}

func (m taskManagerMemory) heapMiB() int { return m.FrameworkHeap + m.TaskHeap }
func (m taskManagerMemory) directMiB() int {
	return m.FrameworkOffHeap + m.TaskOffHeap + m.Network
}
func (m taskManagerMemory) flinkMiB() int   { return m.heapMiB() + m.directMiB() + m.Managed }
func (m taskManagerMemory) processMiB() int { return m.flinkMiB() + m.Metaspace + m.Overhead }

func (m taskManagerMemory) config() map[string]string {
	return map[string]string{
		"taskmanager.memory.framework.heap.size":     mib(m.FrameworkHeap),
		"taskmanager.memory.task.heap.size":          mib(m.TaskHeap),
		"taskmanager.memory.framework.off-heap.size": mib(m.FrameworkOffHeap),
		"taskmanager.memory.task.off-heap.size":      mib(m.TaskOffHeap),
		"taskmanager.memory.network.min":             mib(m.Network),
		"taskmanager.memory.network.max":             mib(m.Network),
		"taskmanager.memory.managed.size":            mib(m.Managed),
		"taskmanager.memory.jvm-metaspace.size":      mib(m.Metaspace),
		"taskmanager.memory.jvm-overhead.min":        mib(m.Overhead),
		"taskmanager.memory.jvm-overhead.max":        mib(m.Overhead),
		"taskmanager.memory.flink.size":              mib(m.flinkMiB()),
		"taskmanager.memory.process.size":            mib(m.processMiB()),
	}
}

func (m taskManagerMemory) jvmArgs() []string {
	return []string{
		"-Xms" + mib(m.heapMiB()),
		"-Xmx" + mib(m.heapMiB()),
		"-XX:MaxDirectMemorySize=" + mib(m.directMiB()),
		"-XX:MaxMetaspaceSize=" + mib(m.Metaspace),
	}
}

var (
	defaultJobManagerMemory  = jobManagerMemory{Heap: 384, OffHeap: 128, Metaspace: 192, Overhead: 64}
	defaultTaskManagerMemory = taskManagerMemory{
		FrameworkHeap: 128, TaskHeap: 256,
		FrameworkOffHeap: 128, TaskOffHeap: 0,
		Network: 64, Managed: 128,
		Metaspace: 192, Overhead: 128,
	}
)

func mib(n int) string { return strconv.Itoa(n) + "m" }

// javaModuleFlags are the JDK module flags of every Flink JVM.
var javaModuleFlags = flinkjvm.ModuleFlags

// Entry points of the two processes.
const (
	jobManagerMainClass  = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
	taskManagerMainClass = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
)

// layout is the folder structure under a cluster's WorkDir.
type layout struct {
	Work, Conf, Logs, Checkpoints, Savepoints, Out, Tmp, Upload, Plugins string
}

func newLayout(workDir string) layout {
	return layout{
		Work:        workDir,
		Conf:        filepath.Join(workDir, "conf"),
		Logs:        filepath.Join(workDir, "logs"),
		Checkpoints: filepath.Join(workDir, "checkpoints"),
		Savepoints:  filepath.Join(workDir, "savepoints"),
		Out:         filepath.Join(workDir, "out"),
		Tmp:         filepath.Join(workDir, "tmp"),
		Upload:      filepath.Join(workDir, "upload"),
		Plugins:     filepath.Join(workDir, "plugins"),
	}
}

func (l layout) dirs() []string {
	return []string{l.Conf, l.Logs, l.Checkpoints, l.Savepoints, l.Out, l.Tmp, l.Upload, l.Plugins}
}

// fileURI turns an absolute local path into a file:// URI for Flink.
func fileURI(path string) string { return "file://" + filepath.ToSlash(path) }

// flinkConfig is the content of conf/config.yaml, shared by both processes.
// The keys are valid in Flink 1.20 and 2.x alike: the checkpoint and
// savepoint folders use the execution.checkpointing.* names that 1.20
// introduced and 2.x requires (the state.*.dir names are deprecated).
// Entries of extra win over the defaults.
func flinkConfig(l layout, p Ports, slots int, extra map[string]string) map[string]string {
	c := map[string]string{
		// Everything on the loopback interface.
		"jobmanager.rpc.address":        "127.0.0.1",
		"jobmanager.rpc.port":           strconv.Itoa(p.JobManagerRPC),
		"jobmanager.bind-host":          "127.0.0.1",
		"taskmanager.host":              "127.0.0.1",
		"taskmanager.bind-host":         "127.0.0.1",
		"rest.address":                  "127.0.0.1",
		"rest.bind-address":             "127.0.0.1",
		"rest.port":                     strconv.Itoa(p.REST),
		"blob.server.port":              strconv.Itoa(p.Blob),
		"high-availability.type":        "NONE",
		"taskmanager.numberOfTaskSlots": strconv.Itoa(slots),
		"taskmanager.cpu.cores":         strconv.Itoa(slots),
		"parallelism.default":           "1",

		// Jar upload and run, cancel from the REST API.
		"web.submit.enable": "true",
		"web.cancel.enable": "true",
		"web.upload.dir":    l.Upload,
		"web.tmpdir":        filepath.Join(l.Tmp, "web"),

		// State.
		"state.backend.type":                    "hashmap",
		"execution.checkpointing.dir":           fileURI(l.Checkpoints),
		"execution.checkpointing.savepoint-dir": fileURI(l.Savepoints),

		// Temporary files stay under WorkDir.
		"io.tmp.dirs":            l.Tmp,
		"blob.storage.directory": filepath.Join(l.Tmp, "blob"),

		// A killed TaskManager or JobManager is noticed within seconds.
		"heartbeat.interval": "1s",
		"heartbeat.timeout":  "10s",
		// ... and a TaskManager finds a restarted JobManager soon after.
		"cluster.registration.max-timeout":                "2s",
		"cluster.registration.error-delay":                "1s",
		"cluster.registration.refused-registration-delay": "1s",

		// In-flight data sized to what a task processes in a second
		// (buffer debloating), as for backpressured jobs in production:
		// a stop-with-savepoint of a slow job waits seconds, not the
		// minute its full network buffers hold.
		"taskmanager.network.memory.buffer-debloat.enabled": "true",
	}
	for k, v := range defaultJobManagerMemory.config() {
		c[k] = v
	}
	for k, v := range defaultTaskManagerMemory.config() {
		c[k] = v
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// renderYAML is the content of a config.yaml (flinkjvm.RenderYAML).
func renderYAML(entries map[string]string) []byte {
	return flinkjvm.RenderYAML("Written by flinkkit's test fixture (internal/testkit/flinkfixture).", entries)
}

// jvmCommand is the java command line of one Flink process.
func jvmCommand(java, lib string, l layout, role string, memArgs []string, mainClass string, progArgs []string) []string {
	return jvmCommandClasspath(java, []string{filepath.Join(lib, "*")}, l, role, memArgs, mainClass, progArgs)
}

// jvmCommandClasspath is jvmCommand with the classpath's entries.
func jvmCommandClasspath(java string, classpath []string, l layout, role string, memArgs []string, mainClass string, progArgs []string) []string {
	args := []string{java}
	args = append(args, memArgs...)
	args = append(args, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
	args = append(args, javaModuleFlags...)
	args = append(args,
		"-Djava.io.tmpdir="+l.Tmp,
		"-Dlog.file="+filepath.Join(l.Logs, role+".log"),
		"-Dlog4j.configurationFile=file:"+filepath.Join(l.Conf, "log4j.properties"),
		"-Dflinkkit.workdir="+l.Work,
		"-classpath", strings.Join(classpath, string(filepath.ListSeparator)),
		mainClass,
		"--configDir", l.Conf,
	)
	return append(args, progArgs...)
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1. They are free
// when this returns; a port can still be taken by another process before
// Flink binds it, which Start reports as a start failure.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("flinkfixture: reserve a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
