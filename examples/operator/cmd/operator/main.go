package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	controllerruntime "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/examples/operator/internal/controller"
	"github.com/flinkkit/flinkkit/examples/operator/internal/storage"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(2)
	}
}

// run parses args and runs the manager until a signal stops it.
func run(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	var (
		flinkURL      = fs.String("flink-url", "", "base URL of the default session cluster's JobManager REST API, such as http://flink-jobmanager:8081: that of the FlinkJobs that name no FlinkSessionCluster; empty: none (every FlinkJob in the Session mode names one)")
		restorePoints = fs.String("restore-points", "", "directory that keeps each deleted FlinkJob's final savepoint, so that a FlinkJob created again with its name starts from it; empty: kept in the API server instead (--restore-points-configmap)")
		restoreCM     = fs.String("restore-points-configmap", controller.DefaultRestorePointsConfigMap, "name of the ConfigMap, in each FlinkJob's namespace, that keeps the deleted FlinkJobs' final savepoints (unless --restore-points is set)")
		poll          = fs.Duration("poll-interval", lifecycle.DefaultControllerPoll, "how often a job at rest is looked at")
		resync        = fs.Duration("resync", lifecycle.DefaultResync, "how often a FlinkJob at rest is reconciled when nothing changed: every half --poll-interval one GET /jobs/overview per session cluster names the FlinkJobs whose job changed, reconciled at once (those whose health is judged: at their health checks, every other --poll-interval); 0 turns the watch off: every FlinkJob every --poll-interval")
		retry         = fs.Duration("retry-interval", lifecycle.DefaultRetryInterval, "how long after an action that did not succeed it is tried again (a new spec at once)")
		metricsAddr   = fs.String("metrics-bind-address", "0", "address of the metrics endpoint; 0 turns it off")
		probeAddr     = fs.String("health-probe-bind-address", ":8081", "address of the health probes")
		leaderElect   = fs.Bool("leader-elect", false, "elect a leader, so that only one replica reconciles")
		concurrent    = fs.Int("max-concurrent-reconciles", 4, "how many FlinkJobs are reconciled at the same time")
		qps           = fs.Float64("flink-qps", 50, "requests per second to the JobManager at most, on average (with bursts of --flink-burst)")
		burst         = fs.Int("flink-burst", 100, "requests to the JobManager at once above --flink-qps")
		jarRoot       = fs.String("jar-root", defaultJarRoot, "the only directory the session FlinkJobs' jarFile may name a jar in (relative to it, or by an absolute path under it); anything else is refused; empty: no jar is read")
		inFlight      = fs.Int("flink-concurrency", 4, "requests to the JobManager in flight at once at most (its rest.server.numThreads is 4 by default)")
		storageConf   = fs.String("storage-flink-config", "", "a Flink configuration file (config.yaml or flink-conf.yaml, such as the one mounted into the Flink pods) whose s3.* options (endpoint, region, path style, credentials) reach the object store of the jobs' s3:// checkpoints and savepoints; empty: no object store. With a storage, each FlinkJob's checkpoint and savepoint directories are audited after each action and every --storage-audit-interval (status.audit), and application clusters' savepoints are disposed of without a JobManager")
		storageLocal  = fs.Bool("storage-local", false, "read and remove the jobs' file: (and absolute-path) checkpoints and savepoints on the operator's own file system: the volume that holds them mounted at the path the Flink pods use")
	)
	config.RegisterFlags(fs) // --kubeconfig
	opts := zap.Options{}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	if *concurrent < 1 {
		return fmt.Errorf("--max-concurrent-reconciles: %d; want 1 or more", *concurrent)
	}
	budget, err := flinkapi.NewRequestBudget(*qps, *burst, *inFlight)
	if err != nil {
		return fmt.Errorf("--flink-qps, --flink-burst, --flink-concurrency: %w", err)
	}
	// No retries inside a call: the operations retry through RequeueAfter.
	clientOpts := []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry), flinkapi.WithTimeout(10 * time.Second)}
	flink, shared, err := defaultSession(*flinkURL, append(clientOpts, flinkapi.WithRequestBudget(budget)), *poll)
	if err != nil {
		return err
	}
	var store lifecycle.RestorePointStore
	if *restorePoints != "" {
		if store, err = lifecycle.NewFileStore(*restorePoints); err != nil {
			return fmt.Errorf("--restore-points: %w", err)
		}
	} else if errs := validation.IsDNS1123Subdomain(*restoreCM); len(errs) > 0 {
		return fmt.Errorf("--restore-points-configmap %q: %s", *restoreCM, strings.Join(errs, "; "))
	}

	jars, err := jarSource(*jarRoot, fs)
	if err != nil {
		return err
	}
	states, err := storage.New(context.Background(), *storageConf, *storageLocal)
	if err != nil {
		return fmt.Errorf("--storage-flink-config: %w", err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubernetes configuration: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
		LeaderElection:         *leaderElect,
		LeaderElectionID:       "flinkjob.flinkkit.dev",
		// Only the Secrets and owned objects it manages, not every one of
		// the cluster.
		Cache: cache.Options{ByObject: controller.CacheByObject()},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if store == nil {
		store = &controller.ConfigMapStore{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Name: *restoreCM}
	}
	r := &controller.FlinkJobReconciler{
		Client:        mgr.GetClient(),
		Flink:         flink,
		Shared:        shared,
		Recorder:      mgr.GetEventRecorder("flinkjob-controller"),
		Store:         store,
		PollInterval:  *poll,
		RetryInterval: *retry,
		Resync:        *resync,
		Options:       controllerruntime.Options{MaxConcurrentReconciles: *concurrent},
		Jars:          jars,
	}
	if states != nil {
		r.Storage = states
	}
	if err := setupSessions(mgr, r, *flinkURL, clientOpts, *poll, *concurrent); err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// defaultJarRoot is --jar-root's default: where Flink's images keep a
// job's jars, mounted into the operator's pod.
const defaultJarRoot = "/opt/flink/usrlib"

// jarSource is the Jars of --jar-root: none when it is empty, or when it
// is the default and does not exist (logged: every session FlinkJob
// naming a jarFile is then refused). A --jar-root set to a directory that
// does not exist is an error.
func jarSource(dir string, fs *flag.FlagSet) (*lifecycle.Jars, error) {
	if dir == "" {
		return nil, nil
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "jar-root" })
	jars, err := lifecycle.JarDir(dir)
	switch {
	case err != nil && set:
		return nil, fmt.Errorf("--jar-root: %w", err)
	case err != nil:
		ctrl.Log.Info("no jar directory: every session FlinkJob that names a jarFile is refused; mount the jars there or set --jar-root", "jarRoot", dir, "error", err.Error())
		return nil, nil
	}
	return jars, nil
}

// defaultSession is the client and shared overview of the default session
// cluster, --flink-url; none (nil) when it is empty.
func defaultSession(flinkURL string, opts []flinkapi.Option, poll time.Duration) (lifecycle.API, *lifecycle.SharedObservation, error) {
	if flinkURL == "" {
		return nil, nil, nil
	}
	flink, err := flinkapi.NewClient(flinkURL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("--flink-url: %w", err)
	}
	return flink, &lifecycle.SharedObservation{Client: flink, MaxAge: poll / 2}, nil
}

// setupSessions gives r the FlinkSessionClusters' clients (each with the
// base options opts, then its own TLS, credentials and request budget)
// and registers their reconciler, which runs their housekeeping.
func setupSessions(mgr ctrl.Manager, r *controller.FlinkJobReconciler, flinkURL string, opts []flinkapi.Option, poll time.Duration, concurrent int) error {
	r.Sessions = &controller.SessionClusters{Client: mgr.GetClient(), Options: opts, SharedMaxAge: poll / 2}
	sr := &controller.SessionClusterReconciler{
		Client: mgr.GetClient(), Sessions: r.Sessions, DefaultURL: flinkURL,
		Recorder: mgr.GetEventRecorder("flinksessioncluster-controller"),
		Options:  controllerruntime.Options{MaxConcurrentReconciles: concurrent},
	}
	if err := sr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("session cluster controller: %w", err)
	}
	return nil
}
