package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The restore points live in a ConfigMap of each FlinkJob's namespace,
// which the operator reads, creates and updates (never deletes: it
// outlives the FlinkJobs).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch

// DefaultRestorePointsConfigMap is the name of the ConfigMap that a
// ConfigMapStore keeps in each namespace unless told another.
const DefaultRestorePointsConfigMap = "flinkkit-restore-points"

// RestorePointsFormatVersion is the newest format of a ConfigMapStore's
// values: {"formatVersion":1,"record":{...savepoint.Record...}}.
const RestorePointsFormatVersion = 1

// MaxRestorePointsBytes is the most a ConfigMap can hold, the keys and
// values of its data added up, as the API server counts it (1 MiB).
const MaxRestorePointsBytes = 1 << 20

// ErrRestorePointsFull is matched by errors.Is for a Put that would take
// a ConfigMapStore's ConfigMap past its size limit. Nothing is written;
// the teardown that asked retries until its deadline.
var ErrRestorePointsFull = errors.New("restore points ConfigMap is full")

// Labels a ConfigMapStore sets on the ConfigMaps it creates.
const (
	labelManagedBy   = "app.kubernetes.io/managed-by"
	labelComponent   = "app.kubernetes.io/component"
	restorePointsApp = "flinkkit-operator"
)

// ConfigMapStore is a lifecycle.RestorePointStore that keeps the restore
// points in the API server: the one stored under "<namespace>/<name>" is
// the key <name> of the ConfigMap Name (DefaultRestorePointsConfigMap) in
// <namespace>. The ConfigMap has no owner, so it outlives every FlinkJob,
// and every replica of the operator sees it: a FlinkJob deleted under one
// leader and created again under the next starts from its final
// savepoint.
//
// A value is JSON: {"formatVersion":1,"record":{...}}, the format version
// (RestorePointsFormatVersion) and the savepoint.Record. Get refuses a
// value of a newer format with an error matching lifecycle.ErrUnknownFormat.
//
// Put and Delete read the ConfigMap and write it back with the
// resourceVersion they read (optimistic concurrency): a write that loses
// a conflict with another writer (another replica, another FlinkJob of the
// namespace) reads again and retries, so no writer's key is lost. Put
// refuses, with ErrRestorePointsFull, a record that would take the
// ConfigMap past MaxBytes; Delete leaves the ConfigMap in place when its
// last key goes.
type ConfigMapStore struct {
	// Client writes the ConfigMaps (create, update).
	Client client.Client
	// Reader reads them; nil: Client. A manager's client reads from its
	// cache, which may lag behind another replica's writes (and caches
	// every ConfigMap it is asked for); cmd/operator passes the manager's
	// API reader, which reads from the API server.
	Reader client.Reader
	// Name is the ConfigMap's name in each namespace; empty:
	// DefaultRestorePointsConfigMap.
	Name string
	// MaxBytes bounds the ConfigMap's data, keys and values added up;
	// zero: MaxRestorePointsBytes.
	MaxBytes int
}

var _ lifecycle.RestorePointStore = (*ConfigMapStore)(nil)

// restorePointValue is what a ConfigMapStore keeps under a key.
type restorePointValue struct {
	FormatVersion int              `json:"formatVersion"`
	Record        savepoint.Record `json:"record"`
}

// conflictBackoff spaces the retries of a write that lost a conflict: 20
// tries within about 3.5 seconds (5 at most with the jitter, which keeps
// two writers that collided from colliding again). No Cap: reaching it
// would end the retries.
var conflictBackoff = wait.Backoff{Steps: 20, Duration: 10 * time.Millisecond, Factor: 1.25, Jitter: 0.5}

func (s *ConfigMapStore) configMapName() string {
	if s.Name != "" {
		return s.Name
	}
	return DefaultRestorePointsConfigMap
}

func (s *ConfigMapStore) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

func (s *ConfigMapStore) maxBytes() int {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return MaxRestorePointsBytes
}

// split checks name ("<namespace>/<name>") and returns the ConfigMap's key
// and the key in it.
func (s *ConfigMapStore) split(name string) (types.NamespacedName, string, error) {
	ns, key, ok := strings.Cut(name, "/")
	var problems []string
	switch {
	case !ok:
		problems = []string{"want <namespace>/<name>"}
	case strings.Contains(key, "/"):
		problems = []string{"want one '/', as in <namespace>/<name>"}
	default:
		for _, p := range validation.IsDNS1123Label(ns) {
			problems = append(problems, "namespace: "+p)
		}
		for _, p := range validation.IsConfigMapKey(key) {
			problems = append(problems, "name: "+p)
		}
	}
	if len(problems) > 0 {
		return types.NamespacedName{}, "", fmt.Errorf("%w %q for a ConfigMap: %s", lifecycle.ErrInvalidName, name, strings.Join(problems, "; "))
	}
	return types.NamespacedName{Namespace: ns, Name: s.configMapName()}, key, nil
}

// Get implements lifecycle.RestorePointStore.
func (s *ConfigMapStore) Get(ctx context.Context, name string) (savepoint.Record, bool, error) {
	at, key, err := s.split(name)
	if err != nil {
		return savepoint.Record{}, false, err
	}
	var cm corev1.ConfigMap
	if err := s.reader().Get(ctx, at, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return savepoint.Record{}, false, nil
		}
		return savepoint.Record{}, false, fmt.Errorf("restore points ConfigMap %s: %w", at, err)
	}
	v, ok := cm.Data[key]
	if !ok {
		return savepoint.Record{}, false, nil
	}
	rec, err := decodeRestorePoint(v)
	if err != nil {
		return savepoint.Record{}, false, fmt.Errorf("restore points ConfigMap %s, key %s: %w", at, key, err)
	}
	return rec, true, nil
}

// decodeRestorePoint reads a ConfigMapStore's value.
func decodeRestorePoint(v string) (savepoint.Record, error) {
	var rp restorePointValue
	if err := json.Unmarshal([]byte(v), &rp); err != nil {
		return savepoint.Record{}, err
	}
	if rp.FormatVersion < 1 || rp.FormatVersion > RestorePointsFormatVersion {
		return savepoint.Record{}, fmt.Errorf("%w: format version %d; this operator reads versions 1 to %d: it was written by another release; run that one or a later one",
			lifecycle.ErrUnknownFormat, rp.FormatVersion, RestorePointsFormatVersion)
	}
	return rp.Record, nil
}

// Put implements lifecycle.RestorePointStore.
func (s *ConfigMapStore) Put(ctx context.Context, name string, rec savepoint.Record) error {
	at, key, err := s.split(name)
	if err != nil {
		return err
	}
	b, err := json.Marshal(restorePointValue{FormatVersion: RestorePointsFormatVersion, Record: rec})
	if err != nil {
		return err
	}
	value := string(b)
	return s.write(ctx, at, func(cm *corev1.ConfigMap) (bool, error) {
		if old, ok := cm.Data[key]; ok && old == value {
			return false, nil
		}
		size := dataSize(cm) + len(key) + len(value)
		if old, ok := cm.Data[key]; ok {
			size -= len(key) + len(old)
		}
		if size > s.maxBytes() {
			return false, fmt.Errorf("%w: ConfigMap %s would hold %d bytes with %s (%d restore points), over its limit of %d: "+
				"remove the keys of FlinkJobs that will not come back (kubectl edit configmap -n %s %s), or run the operator with --restore-points DIR",
				ErrRestorePointsFull, at, size, key, len(cm.Data), s.maxBytes(), at.Namespace, at.Name)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = value
		return true, nil
	})
}

// Delete implements lifecycle.RestorePointStore.
func (s *ConfigMapStore) Delete(ctx context.Context, name string) error {
	at, key, err := s.split(name)
	if err != nil {
		return err
	}
	return s.write(ctx, at, func(cm *corev1.ConfigMap) (bool, error) {
		if _, ok := cm.Data[key]; !ok {
			return false, nil
		}
		delete(cm.Data, key)
		return true, nil
	})
}

// write reads the ConfigMap at (an empty one if there is none), lets
// change edit it (false: nothing to write), and creates or updates it with
// the resourceVersion read; on a conflict, or when another writer created
// it first, it starts again from the read.
func (s *ConfigMapStore) write(ctx context.Context, at types.NamespacedName, change func(*corev1.ConfigMap) (bool, error)) error {
	err := retry.OnError(conflictBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		var cm corev1.ConfigMap
		exists := true
		if err := s.reader().Get(ctx, at, &cm); err != nil {
			if !apierrors.IsNotFound(err) {
				return err
			}
			exists = false
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: at.Name,
				Labels: map[string]string{labelManagedBy: restorePointsApp, labelComponent: "restore-points"}}}
		}
		changed, err := change(&cm)
		if err != nil || !changed {
			return err
		}
		if !exists {
			return s.Client.Create(ctx, &cm)
		}
		return s.Client.Update(ctx, &cm) // carries the resourceVersion read
	})
	if err != nil && !errors.Is(err, ErrRestorePointsFull) {
		return fmt.Errorf("restore points ConfigMap %s: %w", at, err)
	}
	return err
}

// dataSize is the size of cm's data as the API server bounds it: every
// key and value of data and binaryData.
func dataSize(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}
