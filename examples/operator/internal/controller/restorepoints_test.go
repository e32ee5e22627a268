package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// apiStore is a ConfigMapStore on a client of its own that reads from and
// writes to the API server, as cmd/operator's reads through the manager's
// API reader; wrap, if set, wraps its client.
func apiStore(t testing.TB, wrap func(client.Client) client.Client) *ConfigMapStore {
	t.Helper()
	cfg, _ := kube(t)
	c, err := client.New(cfg, client.Options{Scheme: apiServer.scheme})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		c = wrap(c)
	}
	return &ConfigMapStore{Client: c}
}

// restorePoints reads the store's ConfigMap in ns from the API server.
func restorePoints(t testing.TB, ns string) *corev1.ConfigMap {
	t.Helper()
	_, c := kube(t)
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: DefaultRestorePointsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// TestAPIServerConfigMapStore: Get, Put and Delete through the API
// server; the ConfigMap they keep (no owner, the format version in each
// value); a second store sees the first's records; names that are not
// <namespace>/<name>, and values it cannot read, are refused.
func TestAPIServerConfigMapStore(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	s, other := apiStore(t, nil), apiStore(t, nil)
	name := ns + "/counter"
	rec := savepoint.Record{Location: "file:/sp/1", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reason: savepoint.ReasonStop,
		JobID: "0123456789abcdef0123456789abcdef"}

	if _, ok, err := s.Get(ctx, name); ok || err != nil {
		t.Fatalf("Get with no ConfigMap: %v, %v", ok, err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("Delete with no ConfigMap: %v", err)
	}
	if err := s.Put(ctx, name, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ns+"/other", savepoint.Record{Location: "file:/sp/other"}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := other.Get(ctx, name)
	if !ok || err != nil || got.Location != rec.Location || !got.Time.Equal(rec.Time) || got.Reason != rec.Reason || got.JobID != rec.JobID {
		t.Fatalf("second store: Get = %+v, %v, %v", got, ok, err)
	}

	cm := restorePoints(t, ns)
	if len(cm.OwnerReferences) != 0 || cm.Labels[labelManagedBy] != restorePointsApp || len(cm.Data) != 2 {
		t.Errorf("ConfigMap: owners %v, labels %v, %d keys", cm.OwnerReferences, cm.Labels, len(cm.Data))
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(cm.Data["counter"]), &v); err != nil || string(v["formatVersion"]) != "1" || v["record"] == nil {
		t.Errorf("value %s: %v", cm.Data["counter"], err)
	}

	// The same record again writes nothing.
	if err := s.Put(ctx, name, rec); err != nil {
		t.Fatal(err)
	}
	if again := restorePoints(t, ns); again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("an unchanged Put wrote: resourceVersion %s, then %s", cm.ResourceVersion, again.ResourceVersion)
	}

	if err := other.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if _, ok, err := s.Get(ctx, name); ok || err != nil {
		t.Errorf("deleted name: %v, %v", ok, err)
	}
	if got, ok, _ := s.Get(ctx, ns+"/other"); !ok || got.Location != "file:/sp/other" {
		t.Errorf("the other key after the Delete: %+v, %v", got, ok)
	}

	for _, bad := range []string{"", "counter", ns + "/a/b", ns + "/", "/counter", "Upper/counter", ns + "/a b", ns + "/a~b", "ns_x/counter",
		strings.Repeat("a", 64) + "/counter"} {
		if err := s.Put(ctx, bad, rec); !errors.Is(err, lifecycle.ErrInvalidName) {
			t.Errorf("Put(%q) = %v", bad, err)
		}
		if _, _, err := s.Get(ctx, bad); !errors.Is(err, lifecycle.ErrInvalidName) {
			t.Errorf("Get(%q) = %v", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, lifecycle.ErrInvalidName) {
			t.Errorf("Delete(%q) = %v", bad, err)
		}
	}

	// Values it cannot read: a newer format, broken JSON.
	_, c := kube(t)
	cm = restorePoints(t, ns)
	cm.Data["newer"] = `{"formatVersion":2,"record":{"location":"file:/sp/2"}}`
	cm.Data["broken"] = `{"formatVersion":`
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, ns+"/newer"); !errors.Is(err, lifecycle.ErrUnknownFormat) {
		t.Errorf("newer format: %v", err)
	}
	if _, _, err := s.Get(ctx, ns+"/broken"); err == nil || errors.Is(err, lifecycle.ErrUnknownFormat) {
		t.Errorf("broken value: %v", err)
	}
}

// conflictingClient writes, through another store, just before its first
// Update: that Update then carries a stale resourceVersion and the API
// server answers 409 Conflict. It counts the conflicts it saw.
type conflictingClient struct {
	client.Client
	before    func()
	once      sync.Once
	conflicts atomic.Int64
}

func (c *conflictingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if c.before != nil {
		c.once.Do(c.before)
	}
	err := c.Client.Update(ctx, obj, opts...)
	if apierrors.IsConflict(err) {
		c.conflicts.Add(1)
	}
	return err
}

// TestAPIServerConfigMapStoreConflict: a Put that loses a real conflict
// to another writer reads again and writes, keeping the other's key; and
// many writers through two stores on one ConfigMap lose no key.
func TestAPIServerConfigMapStoreConflict(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	other := apiStore(t, nil)
	var cc *conflictingClient
	s := apiStore(t, func(c client.Client) client.Client {
		cc = &conflictingClient{Client: c, before: func() {
			if err := other.Put(ctx, ns+"/b", savepoint.Record{Location: "file:/sp/b"}); err != nil {
				t.Error(err)
			}
		}}
		return cc
	})
	if err := s.Put(ctx, ns+"/a", savepoint.Record{Location: "file:/sp/a0"}); err != nil { // creates the ConfigMap
		t.Fatal(err)
	}
	if err := s.Put(ctx, ns+"/a", savepoint.Record{Location: "file:/sp/a1"}); err != nil { // updates it, after other's write
		t.Fatal(err)
	}
	if n := cc.conflicts.Load(); n != 1 {
		t.Errorf("%d conflicts, want 1", n)
	}
	cm := restorePoints(t, ns)
	a, errA := decodeRestorePoint(cm.Data["a"])
	b, errB := decodeRestorePoint(cm.Data["b"])
	if errA != nil || errB != nil || a.Location != "file:/sp/a1" || b.Location != "file:/sp/b" {
		t.Errorf("after the conflict: %v", cm.Data)
	}

	// 16 writers, 8 through each store, each Putting its own key 5 times
	// and deleting b's key once: every last value is there.
	var conflicts atomic.Int64
	count := func(c client.Client) client.Client {
		return &countConflicts{Client: c, n: &conflicts}
	}
	stores := []*ConfigMapStore{apiStore(t, count), apiStore(t, count)}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 16 {
		wg.Go(func() {
			for i := range 5 {
				if err := stores[w%2].Put(ctx, fmt.Sprintf("%s/w%d", ns, w), savepoint.Record{Location: fmt.Sprintf("file:/sp/%d-%d", w, i)}); err != nil {
					t.Error(err)
				}
			}
			if w == 0 {
				if err := stores[0].Delete(ctx, ns+"/b"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("16 writers, 80 Puts and a Delete in %v, %d conflicts retried", time.Since(start).Round(time.Millisecond), conflicts.Load())
	cm = restorePoints(t, ns)
	for w := range 16 {
		rec, err := decodeRestorePoint(cm.Data[fmt.Sprintf("w%d", w)])
		if err != nil || rec.Location != fmt.Sprintf("file:/sp/%d-4", w) {
			t.Errorf("w%d: %+v, %v", w, rec, err)
		}
	}
	if _, ok := cm.Data["b"]; ok || len(cm.Data) != 17 {
		t.Errorf("keys %d (b there: %v), want 17: a and w0 to w15", len(cm.Data), ok)
	}
}

// countConflicts counts the 409 Conflict answers to its Updates.
type countConflicts struct {
	client.Client
	n *atomic.Int64
}

func (c *countConflicts) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	if apierrors.IsConflict(err) {
		c.n.Add(1)
	}
	return err
}

// TestAPIServerConfigMapStoreFull: the ConfigMap holds 1 MiB: a Put past
// it is refused with ErrRestorePointsFull and writes nothing; a
// replacement of the same size, and a Put after a Delete, go through. A
// store allowed more is refused by the API server itself.
func TestAPIServerConfigMapStoreFull(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	s := apiStore(t, nil)
	big := func(i int) savepoint.Record {
		return savepoint.Record{Location: fmt.Sprintf("s3://bucket/%d/%s", i, strings.Repeat("x", 200<<10))}
	}
	stored := 0
	for i := range 10 {
		err := s.Put(ctx, fmt.Sprintf("%s/job%d", ns, i), big(i))
		if errors.Is(err, ErrRestorePointsFull) {
			t.Logf("refused: %v", err)
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	cm := restorePoints(t, ns)
	if stored != 5 || len(cm.Data) != 5 || dataSize(cm) > MaxRestorePointsBytes {
		t.Fatalf("%d stored, %d keys, %d bytes; want 5 (200 KiB each) within %d", stored, len(cm.Data), dataSize(cm), MaxRestorePointsBytes)
	}
	if err := s.Put(ctx, ns+"/job0", big(9)); err != nil {
		t.Errorf("a replacement of the same size: %v", err)
	}
	if err := s.Delete(ctx, ns+"/job1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ns+"/job5", big(5)); err != nil {
		t.Errorf("Put after a Delete: %v", err)
	}
	if rec, ok, err := s.Get(ctx, ns+"/job0"); !ok || err != nil || !strings.HasPrefix(rec.Location, "s3://bucket/9/") {
		t.Errorf("job0: %.40s, %v, %v", rec.Location, ok, err)
	}

	// Past the API server's own bound: its answer, not ours.
	loose := apiStore(t, nil)
	loose.MaxBytes = 2 * MaxRestorePointsBytes
	err := loose.Put(ctx, ns+"/job6", big(6))
	if err == nil || errors.Is(err, ErrRestorePointsFull) || !apierrors.IsInvalid(err) {
		t.Errorf("past 1 MiB with MaxBytes 2 MiB: %v; want the API server's Invalid", err)
	}
}
