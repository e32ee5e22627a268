package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
)

// RegisterFlags defines the flags that choose the cluster on fs:
// --flink-url, --jar, --entry-class, --out and --savepoint-dir.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.FlinkURL, "flink-url", "", "REST URL of a Flink session cluster's JobManager, such as http://localhost:8081 (default: a fake JobManager in this process)")
	fs.StringVar(&c.Jar, "jar", "", "the job's jar file, required with --flink-url: flinkkit's test job, built by scripts/flink.sh into .cache/flink/<version>/flinkkit-testjob.jar")
	fs.StringVar(&c.EntryClass, "entry-class", CounterJobClass, "the jar's entry class; it must take the test job's arguments (--out, --keys, --rate, --fail-at, ...)")
	fs.StringVar(&c.Out, "out", "", "folder the jobs write their counts to, one subfolder per job, on the TaskManager's machine (default: a new temporary folder)")
	fs.StringVar(&c.SavepointDir, "savepoint-dir", "", "target directory of the savepoints, such as file:///tmp/savepoints (default: the cluster's execution.checkpointing.savepoint-dir)")
}

// ErrorLine turns err into the one line a demo prints before it exits: the
// first line of its message, saying when the context ended it.
func ErrorLine(err error, timeout string) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("gave up after --timeout %s: %w", timeout, err)
	case errors.Is(err, context.Canceled):
		err = fmt.Errorf("interrupted: %w", err)
	}
	msg := err.Error()
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		return msg[:i] + " ..."
	}
	return msg
}
