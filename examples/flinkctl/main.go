package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs flinkctl with the command line args, writing results to stdout
// and an error, if any, as one line to stderr. It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return (&app{stdout: stdout, stderr: stderr}).main(ctx, args)
}

// app is one run of flinkctl: its output, its clock and its global flags.
type app struct {
	stdout, stderr io.Writer
	// clock tells the time and waits; nil: the wall clock. Tests pass
	// flinktest's manual clock, so that nothing sleeps.
	clock lifecycle.Clock

	url string
	// clustersFile is --clusters: the file of the clusters apply, plan,
	// run and delete act on; empty: --flink-url alone.
	clustersFile string
	dir          string
	output       string
	timeout      time.Duration
	poll         time.Duration
	user         string
	password     string
	token        string
	// caFile, clientCert and clientKey are the TLS files: the cluster's
	// CA and the client certificate its REST API asks for.
	caFile     string
	clientCert string
	clientKey  string
	jarRoot    string
	secretDir  string

	// jars is where the Controller reads jars (--jar-root, or the job
	// file's directory); nil: none is read.
	jars *lifecycle.Jars

	// resume is the command line that resumes an interrupted command.
	resume string
	// client is built on first use, and so is out.
	client *flinkapi.Client
	out    *printer
}

const rootLong = `flinkctl runs Apache Flink jobs on a session cluster with flinkkit, safely:
no job is stopped without its state unless you say so, and every command
that is interrupted (Ctrl-C, a crash) resumes where it stopped when run again.

Declarative: describe a job in a YAML file (a name and lifecycle.JobSpec) and
"apply" it; flinkctl deploys, upgrades (with a savepoint), rescales, restarts
and rolls it back as its policies say, storing its status in --state-dir
after every step. "delete" stops it with a final savepoint recorded under its
name, which the next "apply" of that name restores.

Imperative: jobs, savepoint, stop, cancel, savepoints dispose, health.

To try it without a cluster: "flinkctl fake" serves a fake JobManager on
port 8081 (the default --flink-url) with an example job file to apply.

Long operations show a live progress line on a terminal (the savepoint's
acknowledged subtasks and size, the time elapsed) and plain lines on a pipe;
-o json prints the result as JSON for scripts.

The cluster is --flink-url, or $FLINK_URL; apply, plan, run and delete act
on the clusters of a --clusters file instead, each job file naming its
cluster (cluster: NAME). Credentials: --user with
$FLINK_PASSWORD, or $FLINK_TOKEN. A REST API with TLS
(security.ssl.rest.enabled): an https:// URL, with --ca-file for the
cluster's CA and, where it asks for client certificates
(security.ssl.rest.authentication-enabled), --client-cert and
--client-key; the files are read again at each new connection, so a
certificate rotated on disk is used without a restart.

` + exitCodesHelp

// main builds the commands and runs the one args name.
func (a *app) main(ctx context.Context, args []string) int {
	root := &cobra.Command{
		Use:           "flinkctl",
		Short:         "Run Apache Flink jobs safely: apply a job spec, take savepoints, stop, cancel, dispose",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.checkFlags()
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return badInput("%v (see `%s --help`)", err, cmd.CommandPath())
	})
	f := root.PersistentFlags()
	f.StringVar(&a.url, "flink-url", envOr("FLINK_URL", "http://localhost:8081"), "REST URL of the JobManager ($FLINK_URL)")
	f.StringVar(&a.clustersFile, "clusters", os.Getenv("FLINKCTL_CLUSTERS"), "YAML or JSON file of the clusters apply, plan, run and delete act on (clusters: [{name, url}]), read by fleet.DecodeClusters; a job file names its cluster with cluster:, needed when there are several; the credentials and TLS flags apply to each (default: the one cluster --flink-url) ($FLINKCTL_CLUSTERS)")
	f.StringVar(&a.dir, "state-dir", envOr("FLINKCTL_STATE_DIR", defaultStateDir()), "where flinkctl keeps the status of applied jobs and of operations in flight ($FLINKCTL_STATE_DIR)")
	f.StringVarP(&a.output, "output", "o", "text", "output format: text or json")
	f.DurationVar(&a.timeout, "timeout", 15*time.Minute, "give up after this long (exit code 4); the stored progress stays")
	f.DurationVar(&a.poll, "poll", time.Second, "how often a job or an operation is read while waiting")
	f.StringVar(&a.jarRoot, "jar-root", "", "the only directory job files' jars are read from (default: the job file's directory); a jarFile outside it is refused")
	f.StringVar(&a.secretDir, "secret-dir", os.Getenv("FLINKCTL_SECRET_DIR"), "directory of the secrets a job file's args name as ${secret:NAME}: one file per secret, NAME its path in the directory; their values are sent to Flink and never shown ($FLINKCTL_SECRET_DIR)")
	f.StringVar(&a.user, "user", "", "user name of HTTP basic authentication; the password is read from $FLINK_PASSWORD")
	f.StringVar(&a.caFile, "ca-file", os.Getenv("FLINK_CA_FILE"), "PEM file of the CA that signs the JobManager's REST certificate; default: the system's ($FLINK_CA_FILE)")
	f.StringVar(&a.clientCert, "client-cert", os.Getenv("FLINK_CLIENT_CERT"), "PEM file of the client certificate the JobManager asks for, with --client-key ($FLINK_CLIENT_CERT)")
	f.StringVar(&a.clientKey, "client-key", os.Getenv("FLINK_CLIENT_KEY"), "PEM file of the client certificate's private key ($FLINK_CLIENT_KEY)")
	a.password, a.token = os.Getenv("FLINK_PASSWORD"), os.Getenv("FLINK_TOKEN")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(a.applyCmd(), a.planCmd(), a.runCmd(), a.statusCmd(), a.deleteCmd(), a.jobsCmd(), a.savepointCmd(), a.stopCmd(), a.cancelCmd(),
		a.savepointsCmd(), a.healthCmd(), a.fakeCmd())
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "Shell completion: flinkctl completion bash|zsh|fish|powershell"
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "accepts ") ||
		strings.HasPrefix(err.Error(), "requires ") || strings.HasPrefix(err.Error(), "invalid argument") {
		err = badInput("%v (see `flinkctl --help`)", err)
	}
	code, line := classify(err, a.url, a.resume)
	if a.out != nil {
		a.out.Clear() // the error on a row of its own
	}
	fmt.Fprintf(a.stderr, "flinkctl: %s\n", line)
	return code
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (a *app) checkFlags() error {
	switch {
	case a.output != "text" && a.output != "json":
		return badInput("--output %q: want text or json", a.output)
	case a.timeout <= 0:
		return badInput("--timeout %v: must be positive", a.timeout)
	case a.poll <= 0:
		return badInput("--poll %v: must be positive", a.poll)
	case a.dir == "":
		return badInput("--state-dir is empty: name a directory")
	case (a.clientCert == "") != (a.clientKey == ""):
		return badInput("--client-cert and --client-key: give both or neither")
	}
	return nil
}

// state is the state directory.
func (a *app) state() stateDir { return stateDir{root: a.dir} }

// flink is the client of --flink-url, with a few quick retries.
func (a *app) flink() (*flinkapi.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	c, err := a.newClient(flinkapi.RetryPolicy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsed: 5 * time.Second})
	a.client = c
	return c, err
}

// newClient is a client of --flink-url with the credentials given.
func (a *app) newClient(retry flinkapi.RetryPolicy) (*flinkapi.Client, error) {
	return a.newClientAt(a.url, "--flink-url", retry)
}

// newClientAt is a client of url, given by the flag urlFlag, with the
// credentials given.
func (a *app) newClientAt(url, urlFlag string, retry flinkapi.RetryPolicy) (*flinkapi.Client, error) {
	opts := []flinkapi.Option{flinkapi.WithRetryPolicy(retry), flinkapi.WithUserAgent("flinkctl")}
	switch {
	case a.user != "":
		opts = append(opts, flinkapi.WithBasicAuth(a.user, a.password))
	case a.token != "":
		opts = append(opts, flinkapi.WithBearerToken(a.token))
	}
	var files []flinkapi.Option // the TLS files, with the flags that name them
	var flags []string
	if a.caFile != "" {
		files, flags = append(files, flinkapi.WithCAFile(a.caFile)), append(flags, "--ca-file")
	}
	if a.clientCert != "" {
		files, flags = append(files, flinkapi.WithClientCertificateFiles(a.clientCert, a.clientKey)), append(flags, "--client-cert, --client-key")
	}
	c, err := flinkapi.NewClient(url, append(opts, files...)...)
	if err != nil {
		// Name the flag at fault: the URL, else the first file option
		// that fails alone.
		flag := urlFlag
		if _, urlErr := flinkapi.NewClient(url); urlErr == nil {
			for i, o := range files {
				if _, err := flinkapi.NewClient(url, o); err != nil {
					flag = flags[i]
					break
				}
			}
		}
		return nil, badInput("%s: %s", flag, strings.TrimPrefix(err.Error(), "flinkapi: "))
	}
	return c, nil
}

// env is the lifecycle.Env of the operations.
func (a *app) env(c lifecycle.API) lifecycle.Env {
	return lifecycle.Env{Client: c, Clock: a.clock, Timing: lifecycle.Timing{Poll: a.poll}, Jars: a.jars, Secrets: dirSecrets{dir: a.secretDir}}
}

// useJars makes the Controller read jars from --jar-root, or else from
// dir.
func (a *app) useJars(dir string) error {
	root := a.jarRoot
	if root == "" {
		root = dir
	}
	j, err := lifecycle.JarDir(root)
	if err != nil {
		return badInput("--jar-root: %s", strings.TrimPrefix(err.Error(), "lifecycle: "))
	}
	a.jars = j
	return nil
}

// now is the time on the app's clock.
func (a *app) now() time.Time {
	if a.clock != nil {
		return a.clock.Now()
	}
	return time.Now()
}

// sleep waits d on the app's clock.
func (a *app) sleep(ctx context.Context, d time.Duration) error {
	if a.clock != nil {
		return a.clock.Sleep(ctx, d)
	}
	return wait.Sleep(ctx, d)
}

// withTimeout bounds ctx by --timeout.
func (a *app) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// printer shows progress, one for the run so that a phase line clears
// the progress line before it; it writes nothing with -o json.
func (a *app) printer() *printer {
	switch {
	case a.out != nil:
	case a.output == "json":
		a.out = newPlainPrinter(io.Discard)
	default:
		a.out = newPrinter(a.stdout)
	}
	return a.out
}

// emitJSON writes v as indented JSON to stdout.
func (a *app) emitJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// args is a cobra.PositionalArgs of exactly n arguments named names, whose
// error is bad input.
func args(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, as []string) error {
		if len(as) != len(names) {
			return badInput("%s takes %s, got %d argument(s) (see `%s --help`)", cmd.Name(), strings.Join(names, " "), len(as), cmd.CommandPath())
		}
		return nil
	}
}
