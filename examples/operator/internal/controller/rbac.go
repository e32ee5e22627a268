package controller

// The permissions the manager needs, as kubebuilder RBAC markers: `make
// generate` turns them into the ClusterRole flinkkit-operator (and the
// leader election's Role in the operator's namespace) in
// config/rbac/role.yaml, with controller-gen's rbac generator. A
// permission the manager's code starts to need is added here, next to the
// others; the test TestAPIServerLeastPrivilege runs the manager with
// exactly these and fails on a Forbidden.
//
// FlinkJobs: read and watched, the finalizer added and removed (update),
// the status written (flinkjobs/status), and flinkjobs/finalizers so that
// the owner references of the application clusters' objects may block
// the FlinkJob's deletion (the OwnerReferencesPermissionEnforcement
// admission plugin asks for it).
//
// +kubebuilder:rbac:groups=flinkkit.dev,resources=flinkjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flinkkit.dev,resources=flinkjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flinkkit.dev,resources=flinkjobs/finalizers,verbs=update
//
// Events: the reconciler's (events.k8s.io) and the leader election's
// (core).
//
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
//
// The Application mode's clusters (appcluster.Deployer): a ConfigMap, the
// JobManager's and TaskManager's Deployments and the JobManager's
// Service per cluster, created, replaced and deleted, and watched. The
// ConfigMaps also hold the restore points kept in the API server.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
//
// Leader election (--leader-elect): a Lease in the operator's own
// namespace only, a Role there (kustomize sets its namespace with the
// others').
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=flinkkit-system
