// Command operator runs the FlinkJob controller against a Flink session
// cluster, and, for FlinkJobs in the Application mode, in application
// clusters it creates in the FlinkJob's namespace (it then runs inside the
// Kubernetes cluster, to reach their Services):
//
//	operator --flink-url http://flink-jobmanager:8081 [--restore-points DIR]
//
// The final savepoint of a deleted FlinkJob, from which a FlinkJob created
// again under its name starts, is kept in the ConfigMap
// flinkkit-restore-points of its namespace (--restore-points-configmap),
// which every replica sees; --restore-points DIR keeps it in a directory
// instead.
//
// It reads the Kubernetes configuration as kubectl does (KUBECONFIG, or the
// in-cluster service account), needs the CRD of config/crd installed, and
// runs until it gets SIGTERM or SIGINT. --help lists every flag.
package main
