package flinkfixture

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/s3client"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// ObjectStore is an S3-compatible object store on 127.0.0.1 that holds
// the checkpoints and savepoints of clusters started with
// Config.ObjectStore: a SeaweedFS server (its weed command, built from the
// Go module proxy by scripts/s3-assets.sh) with one identity and one
// bucket. Each cluster keeps its state under a prefix of its own,
// s3://<Bucket>/<cluster>/checkpoints and .../savepoints.
type ObjectStore struct {
	// Endpoint is the S3 API's URL, http://127.0.0.1:<port>.
	Endpoint string `json:"endpoint"`
	// Region is the region requests are signed for.
	Region string `json:"region"`
	// AccessKey and SecretKey are the identity's credentials, made up
	// when the server starts.
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
	// Bucket is the bucket the clusters' state is kept in.
	Bucket string `json:"bucket"`
}

// objectStoreBucket is the bucket of every object store the fixture
// starts.
const objectStoreBucket = "flinkkit"

// Client is an S3 client of the store, signed with its identity.
func (s *ObjectStore) Client() *s3client.Client {
	return &s3client.Client{Endpoint: s.Endpoint, Region: s.Region, AccessKey: s.AccessKey, SecretKey: s.SecretKey,
		HTTP: defaultStoreHTTP}
}

// URI is the s3:// URI of key in the store's bucket, as Flink names it.
func (s *ObjectStore) URI(key string) string {
	return "s3://" + s.Bucket + "/" + strings.TrimPrefix(key, "/")
}

// Key is the key that an s3:// (or s3a://) location names in the store's
// bucket, without a trailing slash; ok is false when the location is in
// another bucket or not an S3 URI.
func (s *ObjectStore) Key(location string) (key string, ok bool) {
	bucket, key, ok := splitS3(location)
	if !ok || bucket != s.Bucket {
		return "", false
	}
	return key, true
}

// List returns the objects whose keys start with prefix, in key order.
func (s *ObjectStore) List(ctx context.Context, prefix string) ([]s3client.Object, error) {
	return s.Client().List(ctx, s.Bucket, prefix)
}

// Exists reports whether the object key exists.
func (s *ObjectStore) Exists(ctx context.Context, key string) (bool, error) {
	return s.Client().Exists(ctx, s.Bucket, key)
}

// Delete removes the object key (nothing happens when it does not exist).
func (s *ObjectStore) Delete(ctx context.Context, key string) error {
	return s.Client().Delete(ctx, s.Bucket, key)
}

// flinkConfig are the entries that let Flink's S3 file system plugin
// (flink-s3-fs-hadoop: Hadoop's S3A) reach the store: path-style
// requests to the plain-HTTP endpoint with the store's identity. Its
// upload buffers stay under tmp.
func (s *ObjectStore) flinkConfig(tmp string) map[string]string {
	return map[string]string{
		"s3.endpoint":                 s.Endpoint,
		"s3.endpoint.region":          s.Region,
		"s3.path.style.access":        "true",
		"s3.connection.ssl.enabled":   "false",
		"s3.access-key":               s.AccessKey,
		"s3.secret-key":               s.SecretKey,
		"s3.buffer.dir":               filepath.Join(tmp, "s3a"),
		"s3.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
	}
}

// splitS3 splits s3://bucket/key (or s3a://) into the bucket and the key
// without leading or trailing slashes.
func splitS3(location string) (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(location, "s3://")
	if !found {
		rest, found = strings.CutPrefix(location, "s3a://")
	}
	if !found {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", false
	}
	return bucket, strings.Trim(key, "/"), true
}

// Object stores this process knows of, for LocationExists and
// ListLocation: the ones it started and the shared cluster's.
var (
	storesMu    sync.Mutex
	knownStores []*ObjectStore
)

func registerStore(s *ObjectStore) {
	storesMu.Lock()
	defer storesMu.Unlock()
	for _, k := range knownStores {
		if *k == *s {
			return
		}
	}
	knownStores = append(knownStores, s)
}

func unregisterStore(s *ObjectStore) {
	storesMu.Lock()
	defer storesMu.Unlock()
	for i, k := range knownStores {
		if k == s {
			knownStores = append(knownStores[:i], knownStores[i+1:]...)
			return
		}
	}
}

// storesFor are the known object stores with bucket; the shared
// cluster's (SharedEnv) is read first if this process has not yet.
func storesFor(bucket string) []*ObjectStore {
	if os.Getenv(SharedEnv) != "" {
		_, _ = Shared() // registers the shared cluster's store
	}
	storesMu.Lock()
	defer storesMu.Unlock()
	var out []*ObjectStore
	for _, s := range knownStores {
		if s.Bucket == bucket {
			out = append(out, s)
		}
	}
	return out
}

// ObjectStoreServer is a SeaweedFS server that Start started for a
// cluster with Config.ObjectStore, or StartObjectStore on its own: master,
// volume server, filer and S3 gateway in one process (weed mini), its
// data in a folder of the cluster's WorkDir (or StartObjectStore's).
type ObjectStoreServer struct {
	// Store is the server's endpoint, identity and bucket.
	Store *ObjectStore

	proc    *proc
	ports   []int
	ownDir  string // a temporary folder of StartObjectStore's, removed by Stop
	stopped bool
}

// objectStoreStopGrace is how long the server gets to stop after SIGTERM
// (SeaweedFS takes tens of seconds to stop cleanly; its data is thrown
// away, so it is killed after this).
const objectStoreStopGrace = 2 * time.Second

// weedBinary is SeaweedFS's weed command: $FLINKKIT_WEED, else what
// <repo>/scripts/s3-assets.sh prints (it builds weed once into
// .cache/s3 and prints the cached binary afterwards).
func weedBinary(ctx context.Context) (string, error) {
	if p := os.Getenv("FLINKKIT_WEED"); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("flinkfixture: the object store needs scripts/s3-assets.sh or FLINKKIT_WEED: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "s3-assets.sh"))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("flinkfixture: scripts/s3-assets.sh: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	p := strings.TrimSpace(stdout.String())
	if !isFile(p) {
		return "", fmt.Errorf("flinkfixture: scripts/s3-assets.sh printed %q, not a file", p)
	}
	return p, nil
}

// StartObjectStore starts an object store on its own, for tests of
// storage without a Flink cluster: a SeaweedFS server as Config.ObjectStore
// starts one, its data and output (objectstore.out) under dir, or under a
// new temporary folder that Stop removes when dir is empty. It waits until
// the server serves (within 2 minutes when ctx has no deadline); a start
// that failed because a port it chose was taken meanwhile is tried again
// on new ports, up to three times in all. The store is known to the
// location helpers (LocationExists, ListLocation, ...) until Stop.
func StartObjectStore(ctx context.Context, dir string) (*ObjectStoreServer, error) {
	weed, err := weedBinary(ctx)
	if err != nil {
		return nil, err
	}
	own := ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flinkkit-s3-"); err != nil {
			return nil, err
		}
		own = dir
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := layout{Work: dir, Logs: dir, Plugins: filepath.Join(dir, "plugins")}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		s, err := launchObjectStore(weed, l, filepath.Join(dir, "objectstore"), "")
		if err == nil {
			err = s.waitReady(ctx)
		}
		if err == nil {
			s.ownDir = own
			registerStore(s.Store)
			return s, nil
		}
		if attempt == maxStartAttempts || ctx.Err() != nil || !portTakenError(err) {
			if own != "" {
				_ = os.RemoveAll(own)
			}
			return nil, err
		}
	}
}

// Stop stops the server (SIGTERM, SIGKILL after a short grace: its data is
// thrown away) and removes a temporary folder of StartObjectStore's. It is
// safe to call more than once.
func (s *ObjectStoreServer) Stop() error {
	if s == nil || s.stopped {
		return nil
	}
	s.stopped = true
	err := s.stop()
	if s.ownDir != "" {
		_ = os.RemoveAll(s.ownDir)
	}
	return err
}

// launchObjectStore starts a SeaweedFS server with its data in dir on new
// free ports, with a new identity, and returns at once: its endpoint is
// known, and waitReady waits until it serves.
func launchObjectStore(weed string, l layout, dir, regDir string) (*ObjectStoreServer, error) {
	_ = os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	store := &ObjectStore{Region: "us-east-1", Bucket: objectStoreBucket,
		AccessKey: "flinkkit-" + randomHex(4), SecretKey: randomHex(20)}
	ident := map[string]any{"identities": []any{map[string]any{
		"name":        "flinkkit",
		"credentials": []any{map[string]string{"accessKey": store.AccessKey, "secretKey": store.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, _ := json.MarshalIndent(ident, "", "  ")
	config := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return nil, err
	}
	ports, err := freePorts(10)
	if err != nil {
		return nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	store.Endpoint = "http://127.0.0.1:" + p(6)
	// weed mini: master, volume server, filer, S3 gateway and the admin
	// server with one maintenance worker in one process. Unlike weed
	// server, whose fresh master holds off its first volume for a
	// heartbeat interval (5 s), it writes at once: it serves within a few
	// seconds. Every port is given, so that none is moved elsewhere (a
	// given port that is taken fails the start); WebDAV, the admin UI and
	// the Iceberg and Lance catalogs are off.
	argv := []string{weed, "mini",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(0), "-master.port.grpc=" + p(1), "-master.telemetry=false",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3),
		"-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3.port=" + p(6), "-s3.port.grpc=" + p(7), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config=" + config, "-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-admin.port=" + p(8), "-admin.port.grpc=" + p(9), "-admin.port.legacy=0",
		"-admin.ui=false", "-admin.password=" + randomHex(12), "-webdav=false",
	}
	// The Go runtime's heap is kept small: the machine runs two Flink
	// clusters besides.
	env := []string{"GOMEMLIMIT=128MiB"}
	pr, err := startProcIn("objectstore", argv, env, dir, "-dir="+data, l, regDir)
	if err != nil {
		return nil, err
	}
	return &ObjectStoreServer{Store: store, proc: pr, ports: ports}, nil
}

// waitReady waits until the server serves: it creates the bucket and
// writes, reads and deletes an object, again every 200 ms until it all
// works (the first write also makes the server grow its volumes, so that
// Flink's first checkpoint does not wait for it). On failure it stops the
// server and returns the error with the server's output.
func (s *ObjectStoreServer) waitReady(ctx context.Context) error {
	err := s.waitServing(ctx)
	if err != nil {
		logs := s.logTail()
		s.stop()
		return fmt.Errorf("%w\n%s", err, logs)
	}
	return nil
}

func (s *ObjectStoreServer) waitServing(ctx context.Context) error {
	c := s.Store.Client()
	var last error
	for {
		if s.proc.exited() {
			return fmt.Errorf("flinkfixture: the object store stopped during start (%s)", s.proc.exitDescription())
		}
		last = func() error {
			if err := c.CreateBucket(ctx, s.Store.Bucket); err != nil {
				return err
			}
			const probe = ".flinkkit-ready"
			if err := c.Put(ctx, s.Store.Bucket, probe, []byte("ready")); err != nil {
				return err
			}
			if b, err := c.Get(ctx, s.Store.Bucket, probe); err != nil || string(b) != "ready" {
				return fmt.Errorf("read back %q: %v", b, err)
			}
			return c.Delete(ctx, s.Store.Bucket, probe)
		}()
		if last == nil {
			last = s.adminServing()
		}
		if last == nil {
			return nil
		}
		if strings.Contains(last.Error(), "address already in use") {
			return last // a port it was given was taken meanwhile: start again on others
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("flinkfixture: object store at %s not ready: %w (last: %v)", s.Store.Endpoint, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// adminServing reports whether the server's admin server (its
// maintenance worker's master) listens on the port it was given. It binds
// that port after the S3 gateway serves; a port that an outbound
// connection took meanwhile makes it fail, and the server then exits
// minutes later when the admin server never becomes ready, taking the
// S3 gateway with it. Its output says so at once: that is an error to
// start again on other ports.
func (s *ObjectStoreServer) adminServing() error {
	if len(s.ports) < 9 {
		return nil
	}
	if tail := s.logTail(); strings.Contains(tail, "Admin server error") && strings.Contains(tail, "address already in use") {
		return fmt.Errorf("flinkfixture: the object store's admin server could not bind port %d: address already in use", s.ports[8])
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.ports[8]), time.Second)
	if err != nil {
		return fmt.Errorf("flinkfixture: the object store's admin server is not listening yet: %w", err)
	}
	return c.Close()
}

// defaultStoreHTTP sends the fixture's own requests to object stores:
// each is answered within seconds on 127.0.0.1.
var defaultStoreHTTP = &http.Client{Timeout: 10 * time.Second}

// logTail is the last lines of the server's output.
func (s *ObjectStoreServer) logTail() string {
	path := filepath.Join(s.proc.logDir, "objectstore.out")
	lines, err := tailLines(path, 60)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("===== %s (last %d lines) =====\n%s\n", path, len(lines), strings.Join(lines, "\n"))
}

// stop stops the server (SIGTERM, SIGKILL after objectStoreStopGrace)
// and removes the Unix sockets SeaweedFS keeps in /tmp for its gRPC ports.
func (s *ObjectStoreServer) stop() error {
	if s == nil {
		return nil
	}
	unregisterStore(s.Store)
	err := s.proc.stop(objectStoreStopGrace)
	for _, name := range []string{"master", "volume", "filer", "s3", "admin"} {
		for _, port := range s.ports {
			_ = os.Remove(fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", name, port))
		}
	}
	return err
}

// RSS is the server's resident memory in bytes (its binary's pages
// included), or 0 when it does not run.
func (s *ObjectStoreServer) RSS() int64 {
	if s == nil || s.proc.exited() {
		return 0
	}
	n, _ := rssBytes(s.proc.pid)
	return n
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// ListLocation returns the names of the files under a savepoint or
// checkpoint location, or under any folder of a cluster's state (a
// file: URI or an absolute path on this machine, or an s3:// URI in an
// object store of this process or of the shared cluster): the paths
// relative to location, '/'-separated, in order. An S3 location lists
// the objects under its prefix, without the empty "folder/" objects that
// mark folders. A location that does not exist has no files.
func ListLocation(ctx context.Context, location string) ([]string, error) {
	if bucket, key, ok := splitS3(location); ok {
		var names []string
		err := eachObject(ctx, bucket, key, func(name string) {
			if !strings.HasSuffix(name, "/") {
				names = append(names, name)
			}
		})
		slices.Sort(names)
		return names, err
	}
	root, err := localPath(location)
	if err != nil {
		return nil, err
	}
	var names []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	return names, err
}

// ListChildren returns the names of the entries right under location
// (files and folders; see ListLocation for the locations it reads), in
// order. In an object store a folder is the first part of the keys under
// location, or an empty "folder/" object. A location that does not exist
// has no entries.
func ListChildren(ctx context.Context, location string) ([]string, error) {
	if bucket, key, ok := splitS3(location); ok {
		var names []string
		err := eachObject(ctx, bucket, key, func(name string) {
			first, _, _ := strings.Cut(name, "/")
			if first != "" && !slices.Contains(names, first) {
				names = append(names, first)
			}
		})
		slices.Sort(names)
		return names, err
	}
	dir, err := localPath(location)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// DeleteLocation removes location and everything under it (see
// ListLocation for the locations it reads): in an object store, every
// object under the prefix and the object the location names. A location
// that does not exist is no error.
func DeleteLocation(ctx context.Context, location string) error {
	if bucket, key, ok := splitS3(location); ok {
		if key == "" {
			return fmt.Errorf("flinkfixture: %s is a whole bucket", location)
		}
		var keys []string
		if err := eachObject(ctx, bucket, key, func(name string) { keys = append(keys, key+"/"+name) }); err != nil {
			return err
		}
		for _, s := range storesFor(bucket) {
			for _, k := range append(keys, key, key+"/") {
				if err := s.Delete(ctx, k); err != nil {
					return err
				}
			}
		}
		return nil
	}
	p, err := localPath(location)
	if err != nil {
		return err
	}
	if p == filepath.Dir(p) {
		return fmt.Errorf("flinkfixture: %s is the root folder", location)
	}
	return os.RemoveAll(p)
}

// eachObject calls fn with the name, relative to key, of every object
// under the prefix key+"/" in the known stores with bucket.
func eachObject(ctx context.Context, bucket, key string, fn func(name string)) error {
	return eachObjectInfo(ctx, bucket, key, func(name string, _ s3client.Object) { fn(name) })
}

// eachObjectInfo is eachObject with each object's size and time.
func eachObjectInfo(ctx context.Context, bucket, key string, fn func(name string, o s3client.Object)) error {
	stores := storesFor(bucket)
	if len(stores) == 0 {
		return fmt.Errorf("flinkfixture: no object store of this process or of the shared cluster has bucket %q", bucket)
	}
	prefix := key + "/"
	if key == "" {
		prefix = ""
	}
	for _, s := range stores {
		objs, err := s.List(ctx, prefix)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if name := strings.TrimPrefix(o.Key, prefix); name != "" {
				fn(name, o)
			}
		}
	}
	return nil
}

// localPath is the path of a file: URI (file:/p, file:///p or
// file://localhost/p) or of an absolute path.
func localPath(location string) (string, error) {
	p := location
	if rest, ok := strings.CutPrefix(location, "file:"); ok {
		p = rest
		if host, ok := strings.CutPrefix(rest, "//"); ok {
			i := strings.IndexByte(host, '/')
			if i < 0 || host[:i] != "" && host[:i] != "localhost" {
				return "", fmt.Errorf("flinkfixture: %s is not a file of this machine", location)
			}
			p = host[i:]
		}
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("flinkfixture: %s is neither an s3:// URI, a file: URI nor an absolute path", location)
	}
	return filepath.Clean(p), nil
}

// useObjectStore keeps the cluster's state in an object store: the shared
// cluster's (SharedEnv) if it has one, else a server of the cluster's own
// with its data under WorkDir, launched here (c.server.waitReady waits
// until it serves); and links Flink's S3 file system plugin from the cache
// into the cluster's plugins folder.
func (c *Cluster) useObjectStore(ctx context.Context, versionDir string) error {
	jars, _ := filepath.Glob(filepath.Join(versionDir, "plugins", "s3-fs-hadoop", "flink-s3-fs-hadoop-*.jar"))
	if len(jars) != 1 {
		return fmt.Errorf("flinkfixture: %d flink-s3-fs-hadoop jars in %s, want 1 (run scripts/flink.sh %s)",
			len(jars), filepath.Join(versionDir, "plugins", "s3-fs-hadoop"), c.Version)
	}
	plugin := filepath.Join(c.layout.Plugins, "s3-fs-hadoop")
	if err := os.MkdirAll(plugin, 0o755); err != nil {
		return err
	}
	link := filepath.Join(plugin, filepath.Base(jars[0]))
	_ = os.Remove(link)
	if err := os.Symlink(jars[0], link); err != nil {
		return err
	}
	var store *ObjectStore
	if os.Getenv(SharedEnv) != "" {
		shared, err := Shared()
		if err != nil {
			return err
		}
		store = shared.Store
	}
	if store == nil {
		// Started here, ready later: the server starts while the JVMs do
		// (Start waits for both).
		weed, err := weedBinary(ctx)
		if err != nil {
			return err
		}
		srv, err := launchObjectStore(weed, c.layout, filepath.Join(c.WorkDir, "objectstore"), c.regDir)
		if err != nil {
			return err
		}
		c.server = srv
		store = srv.Store
		registerStore(store)
	}
	name := filepath.Base(c.WorkDir)
	if !c.ownWorkDir {
		name += "-" + randomHex(3) // a WorkDir of the caller's may share its base name with another
	}
	c.Store = store
	c.SavepointURI = store.URI(name + "/savepoints")
	c.CheckpointURI = store.URI(name + "/checkpoints")
	c.SavepointDir, c.CheckpointDir = "", ""
	return nil
}

// waitObjectStore waits until the object store the cluster started
// serves, within Config.StartTimeout when ctx has no deadline.
func (c *Cluster) waitObjectStore(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.StartTimeout)
		defer cancel()
	}
	return c.server.waitReady(ctx)
}

// StateStorage reads and removes the state of the tests' clusters where
// it lies, on local disk or in an object store (ListChildren,
// DeleteLocation): it has the methods of lifecycle.Storage, for a
// Controller whose cluster keeps its checkpoints in an object store,
// which lifecycle.LocalStorage does not reach. List returns full paths
// in dir's form.
type StateStorage struct{}

// List returns the entries right under dir as dir/<name>, in order.
func (StateStorage) List(ctx context.Context, dir string) ([]string, error) {
	names, err := ListChildren(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimSuffix(dir, "/") + "/" + n
	}
	return out, nil
}

// Entries is List with each entry's size and time
// (lifecycle.StorageEntries), as the object store or the disk tells
// them: a file's (an object's) size and modification time; a directory
// in an object store (a common prefix) has neither.
func (StateStorage) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	bucket, key, ok := splitS3(dir)
	if !ok {
		return lifecycle.LocalStorage{}.Entries(ctx, dir)
	}
	var out []lifecycle.StorageEntry
	at := map[string]int{}
	err := eachObjectInfo(ctx, bucket, key, func(name string, o s3client.Object) {
		first, _, deeper := strings.Cut(name, "/")
		if first == "" {
			return
		}
		i, seen := at[first]
		if !seen {
			i, at[first] = len(out), len(out)
			out = append(out, lifecycle.StorageEntry{Path: strings.TrimSuffix(dir, "/") + "/" + first})
		}
		e := &out[i]
		switch {
		case deeper:
			e.Dir, e.Size, e.Modified = true, 0, time.Time{}
		case !e.Dir:
			e.Size, e.Modified = o.Size, o.LastModified
		}
	})
	slices.SortFunc(out, func(a, b lifecycle.StorageEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

// Delete removes path and everything under it.
func (StateStorage) Delete(ctx context.Context, path string) error {
	return DeleteLocation(ctx, path)
}
