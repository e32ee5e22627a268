// Package flinkjvm holds what every Flink JVM that flinkkit starts without
// Flink's shell scripts needs: the JDK module flags, the config.yaml
// format, the logging configuration and the environment.
package flinkjvm

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Log4jConfig sends each process's log to the file named by the log.file
// system property (which is also what the web UI's log views read), with
// the chatty RPC, network, ZooKeeper and Hadoop loggers at WARN.
const Log4jConfig = `# Written by flinkkit.
monitorInterval = 0
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender

appender.main.name = MainAppender
appender.main.type = File
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %c{1.} [%t] - %m%n

logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
logger.akka.name = akka
logger.akka.level = WARN
logger.netty.name = org.apache.flink.shaded.netty4.io.netty
logger.netty.level = WARN
logger.zookeeper.name = org.apache.flink.shaded.zookeeper3
logger.zookeeper.level = WARN
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
`

// Env is the environment of a Flink JVM: the caller's, without the
// settings that would make Flink read another configuration or the JVM
// take options flinkkit does not control.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "FLINK_CONF_DIR", "FLINK_PROPERTIES", "FLINK_PLUGINS_DIR", "FLINK_LIB_DIR", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ModuleFlags open the JDK internals that Flink reaches into. Flink's
// distribution passes this list to every JVM through env.java.opts.all in its
// default config.yaml; that key is read only by Flink's shell scripts, so a
// JVM started without them gets the flags on its command line.
var ModuleFlags = []string{
	"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	"--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED",
	"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED",
	"--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

// RenderYAML is a config.yaml: header as a comment line, then flat
// "key: value" lines in key order. Every value is a
// double-quoted YAML string; Flink parses each option from its string form.
func RenderYAML(header string, entries map[string]string) []byte {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# " + header + "\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, yamlQuote(entries[k]))
	}
	return []byte(b.String())
}

// yamlQuote returns s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
