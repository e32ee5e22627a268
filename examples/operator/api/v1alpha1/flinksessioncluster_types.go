package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flinkkit/flinkkit/policy"
)

// FlinkSessionClusterSpec is where a Flink session cluster's JobManager
// answers and how the operator talks to it: its REST URL, TLS and
// credentials from Secrets in the cluster's namespace, a budget of
// requests, and the housekeeping of its jars.
type FlinkSessionClusterSpec struct {
	// URL is the base URL of the JobManager's REST API, such as
	// http://flink-jobmanager:8081 or https://flink.example:8443.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`
	// TLS configures an https URL: the CA that signs the JobManager's
	// certificate and a client certificate for Flink's mutual REST TLS.
	// +optional
	TLS *SessionTLS `json:"tls,omitempty"`
	// Auth sends credentials to a proxy in front of the JobManager:
	// basic authentication or a bearer token, not both.
	// +optional
	Auth *SessionAuth `json:"auth,omitempty"`
	// RequestBudget bounds the requests all FlinkJobs on this cluster send
	// to it; unset: DefaultSessionQPS, DefaultSessionBurst and
	// DefaultSessionConcurrency.
	// +optional
	RequestBudget *RequestBudget `json:"requestBudget,omitempty"`
	// Housekeeping tunes the periodic look at the cluster's jars and jobs:
	// jars no FlinkJob uses are deleted, jobs no FlinkJob runs are
	// reported.
	// +optional
	Housekeeping Housekeeping `json:"housekeeping,omitempty"`
}

// SessionTLS names the Secrets of a session cluster's TLS.
type SessionTLS struct {
	// CASecret names a Secret whose key ca.crt holds the PEM certificates
	// of the authorities that sign the JobManager's certificate; unset: the
	// system's.
	// +optional
	CASecret string `json:"caSecret,omitempty"`
	// ClientCertSecret names a Secret of type kubernetes.io/tls (keys
	// tls.crt and tls.key, PEM) with the client certificate the JobManager
	// asks for (rest.ssl.authentication.enabled).
	// +optional
	ClientCertSecret string `json:"clientCertSecret,omitempty"`
	// ServerName, if set, is the name the JobManager's certificate must
	// carry, when the URL's host is not it.
	// +optional
	ServerName string `json:"serverName,omitempty"`
}

// SessionAuth names the Secret of a session cluster's credentials.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.basicAuthSecret) && has(self.bearerTokenSecret))",message="basicAuthSecret and bearerTokenSecret: set one"
type SessionAuth struct {
	// BasicAuthSecret names a Secret of type kubernetes.io/basic-auth
	// (keys username and password) sent as HTTP basic authentication.
	// +optional
	BasicAuthSecret string `json:"basicAuthSecret,omitempty"`
	// BearerTokenSecret names a Secret whose key token is sent as
	// "Authorization: Bearer <token>".
	// +optional
	BearerTokenSecret string `json:"bearerTokenSecret,omitempty"`
}

// RequestBudget bounds the requests to a JobManager (flinkapi's
// RequestBudget): QPS per second on average, Burst at once above it, and
// Concurrency in flight at most.
type RequestBudget struct {
	// QPS is the requests per second at most, on average.
	// +kubebuilder:validation:Minimum=1
	QPS int32 `json:"qps"`
	// Burst is how many requests may go at once above QPS; 0: QPS.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Burst int32 `json:"burst,omitempty"`
	// Concurrency is how many requests may be in flight at once; 0:
	// DefaultSessionConcurrency.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Concurrency int32 `json:"concurrency,omitempty"`
}

// Housekeeping tunes the housekeeping of a session cluster
// (lifecycle.CleanSession). It never stops a job.
type Housekeeping struct {
	// Disabled turns the housekeeping off: no jar is deleted, no job
	// reported.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Interval is how often it runs; 0: DefaultHousekeepingInterval.
	// +optional
	Interval policy.Duration `json:"interval,omitempty"`
	// JarGrace keeps jars uploaded less than this long ago, which a
	// submit may not have recorded yet; 0: lifecycle.DefaultJarGrace.
	// +optional
	JarGrace policy.Duration `json:"jarGrace,omitempty"`
	// JobGrace leaves out of the report jobs started less than this long
	// ago; 0: lifecycle.DefaultJobGrace.
	// +optional
	JobGrace policy.Duration `json:"jobGrace,omitempty"`
}

// Defaults of a FlinkSessionCluster.
const (
	// DefaultSessionQPS, DefaultSessionBurst and DefaultSessionConcurrency
	// are the request budget of a session cluster without one, those of
	// the operator's --flink-qps, --flink-burst and --flink-concurrency.
	DefaultSessionQPS         = 50
	DefaultSessionBurst       = 100
	DefaultSessionConcurrency = 4
	// DefaultHousekeepingInterval is Housekeeping.Interval's default.
	DefaultHousekeepingInterval = 5 * time.Minute
)

// FlinkSessionClusterStatus is what the operator last saw of the
// cluster.
type FlinkSessionClusterStatus struct {
	// ObservedGeneration is the generation of the spec last looked at.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// FlinkVersion is the JobManager's Flink version, as its GET /config
	// reports it, when it was last reachable.
	// +optional
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// LastHousekeeping is when the housekeeping last ran to its end.
	// +optional
	LastHousekeeping *metav1.Time `json:"lastHousekeeping,omitempty"`
	// DeletedJars counts the jars the housekeeping deleted since the
	// operator started looking at the cluster.
	// +optional
	DeletedJars int64 `json:"deletedJars,omitempty"`
	// UnclaimedJobs are the ids of the jobs that run on the cluster and
	// that no FlinkJob runs, as the last housekeeping found them (at most
	// 50). Nothing stops them.
	// +optional
	UnclaimedJobs []string `json:"unclaimedJobs,omitempty"`
	// Conditions: Reachable is True while the JobManager answers, and
	// otherwise says why not (the Secrets, the URL, the JobManager).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlinkSessionCluster is a Flink session cluster the operator runs
// FlinkJobs on: a FlinkJob in its namespace names it in
// spec.sessionCluster. The operator keeps a client of it (its URL, TLS,
// credentials and request budget), reports whether it answers and its
// Flink version, and deletes the jars no FlinkJob uses.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Flink",type=string,JSONPath=`.status.flinkVersion`
type FlinkSessionCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cluster's address and how to talk to it.
	Spec FlinkSessionClusterSpec `json:"spec,omitempty"`
	// Status is what the operator last saw of the cluster.
	Status FlinkSessionClusterStatus `json:"status,omitempty"`
}

// FlinkSessionClusterList is a list of FlinkSessionClusters.
//
// +kubebuilder:object:root=true
type FlinkSessionClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkSessionCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &FlinkSessionCluster{}, &FlinkSessionClusterList{})
		return nil
	})
}
