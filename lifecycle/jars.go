package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// DefaultMaxJarSize is the largest jar file Jars reads when its MaxSize
// is 0: 512 MiB, larger than any job jar Flink's default
// rest.client.max-content-length (100 MiB) lets through.
const DefaultMaxJarSize int64 = 512 << 20

// Jars is where the jar files a spec names (JobTemplate.JarFile,
// Submit.JarFile and the other operations' JarFile) are read from: a
// directory (JarDir) that no name, "..", absolute path or symbolic link
// may leave, or a file system (JarFS). It is the caller's decision, not
// the spec's author's: give the Controller of a spec anyone may write the
// directory of the jars they may run, and nothing more.
//
// A name outside the source, or anything but a regular file (a device, a
// FIFO, a directory, a socket), or a file larger than MaxSize is refused
// with an error matching ErrInvalidSpec that names the file and the
// source, before a byte of it is read or sent; a name that does not
// exist (yet) is an error that does not. Every read is bounded by
// MaxSize and ends when its context ends. Each read opens the file once:
// its type and size are checked on the open file, and the digest and the
// upload read from it, so a file replaced between the check and the read
// is not read.
//
// A nil *Jars reads no jar: every JarFile is refused (ErrInvalidSpec).
// Env.Jars is nil unless set. A JarID (a jar uploaded by the caller) or a
// Deployer (whose JarFile names a file of the cluster's image, which
// nothing here reads) needs no Jars.
//
// A Jars holds no open file: build it once or at every call. The digests
// of a JarDir's jars are kept for every JarDir of the same directory,
// those of a JarFS's by the JarFS.
type Jars struct {
	// MaxSize is the largest jar file read, in bytes; 0:
	// DefaultMaxJarSize.
	MaxSize int64

	dir     string   // JarDir's, absolute
	fsys    fs.FS    // JarFS's
	name    string   // the source, as errors name it
	digests sync.Map // JarFS's: jarKey -> string
}

// dirDigests are the digests of JarDirs' jars.
var dirDigests sync.Map // jarKey -> string

func (j *Jars) cache() *sync.Map {
	if j.fsys != nil {
		return &j.digests
	}
	return &dirDigests
}

// JarDir is a Jars reading the files under dir, and only them. A JarFile
// may name a file relative to dir ("app/job.jar") or by an absolute path
// under dir ("/opt/flink/usrlib/app/job.jar", for dir
// "/opt/flink/usrlib"); symbolic links are followed only while they stay
// under dir, and only relative ones (os.Root refuses a link to an
// absolute path, even one under dir).
func JarDir(dir string) (*Jars, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: jar directory %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: jar directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("lifecycle: jar directory %s is not a directory", abs)
	}
	return &Jars{dir: abs, name: abs}, nil
}

// JarFS is a Jars reading the files of fsys, named by slash-separated
// paths relative to its root (fs.ValidPath; a leading "/" is taken as
// fsys's root). name says in errors which file system it is. The file
// system decides where its files are: os.DirFS follows symbolic links out
// of its directory, (*os.Root).FS does not; for a directory, prefer
// JarDir.
func JarFS(fsys fs.FS, name string) *Jars {
	return &Jars{fsys: fsys, name: name}
}

// String is the source's name: JarDir's absolute directory or JarFS's
// name.
func (j *Jars) String() string {
	if j == nil {
		return "no jar source"
	}
	return j.name
}

func (j *Jars) maxSize() int64 {
	if j.MaxSize > 0 {
		return j.MaxSize
	}
	return DefaultMaxJarSize
}

// ErrJarRefused is matched, with ErrInvalidSpec, by the error of a jar
// file that Jars does not read: outside its source, not a regular file,
// too large, or no source at all.
var ErrJarRefused = errors.New("jar file refused")

// refuse is the error of a jar file the source does not give.
func (j *Jars) refuse(file, why string) error {
	return fmt.Errorf("%w: %w: job.jarFile %q %s %s", ErrInvalidSpec, ErrJarRefused, file, why, j.String())
}

// jarFile is a jar file opened in a source and checked: a regular file
// of at most the source's MaxSize.
type jarFile struct {
	f    fs.File
	name string // the path in the source
	key  jarKey
	max  int64
}

type jarKey struct {
	dir  string // JarDir's
	name string
	size int64
	mod  time.Time
}

// open opens file in the source and checks it, reading nothing of it.
func (j *Jars) open(file string) (*jarFile, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: %w: job.jarFile %q: no jar source is configured (Env.Jars), so no jar file is read", ErrInvalidSpec, ErrJarRefused, file)
	}
	name, err := j.local(file)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".jar") {
		return nil, j.refuse(file, "does not end in .jar, as Flink requires; jars are read from")
	}
	var f fs.File
	if j.fsys == nil {
		f, err = openInDir(j.dir, name)
	} else {
		// An fs.FS opens without flags: look first, so that a FIFO is
		// refused rather than opened; the open file is checked again.
		var fi fs.FileInfo
		if fi, err = fs.Stat(j.fsys, name); err == nil && !fi.Mode().IsRegular() {
			return nil, j.refuse(file, "is not a regular file ("+fi.Mode().Type().String()+"); only regular files are read from")
		}
		if err == nil {
			f, err = j.fsys.Open(name)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q in %s", errJarMissing, file, j.String())
	}
	if err != nil {
		// A symbolic link out of the source, a denied permission, a loop.
		return nil, j.refuse(file, "cannot be opened ("+openFailure(err)+") in")
	}
	testHookJarOpened(name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lifecycle: jar file %q in %s: %w", file, j.String(), err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, j.refuse(file, "is not a regular file ("+fi.Mode().Type().String()+"); only regular files are read from")
	}
	if fi.Size() > j.maxSize() {
		f.Close()
		return nil, j.refuse(file, fmt.Sprintf("is %d bytes, more than the %d bytes jars may have in", fi.Size(), j.maxSize()))
	}
	return &jarFile{f: f, name: name, key: jarKey{dir: j.dir, name: name, size: fi.Size(), mod: fi.ModTime()}, max: j.maxSize()}, nil
}

// errJarMissing is matched by the error of a jar file that does not
// exist: the upload fails, and the digest stays unknown until it does.
var errJarMissing = errors.New("lifecycle: no such jar file")

// openInDir opens name in dir, following no link out of it (os.Root),
// non-blocking: the open of a FIFO returns at once, and is refused by
// its caller, rather than wait for a writer.
func openInDir(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// testHookJarOpened is called between the open of a jar and its checks:
// tests replace the file there.
var testHookJarOpened = func(string) {}

// openFailure is the cause of a failed open, without the path, which the
// caller's message names.
func openFailure(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// local is file's path in the source: relative, slash-separated, inside
// it. A path that leaves it is refused.
func (j *Jars) local(file string) (string, error) {
	if file == "" || strings.ContainsRune(file, 0) {
		return "", j.refuse(file, "is not a file name in")
	}
	if j.fsys == nil {
		rel := file
		if filepath.IsAbs(file) {
			r, err := filepath.Rel(j.name, filepath.Clean(file))
			if err != nil {
				return "", j.refuse(file, "is outside")
			}
			rel = r
		}
		if !filepath.IsLocal(rel) {
			return "", j.refuse(file, "is outside")
		}
		return filepath.ToSlash(filepath.Clean(rel)), nil
	}
	name := strings.TrimPrefix(file, "/")
	if !fs.ValidPath(name) || name == "." {
		return "", j.refuse(file, "is outside")
	}
	return name, nil
}

// copy reads the whole file into w, up to the size limit, stopping when
// ctx ends.
func (jf *jarFile) copy(ctx context.Context, w io.Writer) (int64, error) {
	n, err := io.Copy(w, jf.reader(ctx))
	if err == nil && n > jf.max {
		err = fmt.Errorf("%w: %w: job.jarFile %q grew past %d bytes while read", ErrInvalidSpec, ErrJarRefused, jf.name, jf.max)
	}
	return n, err
}

// reader reads the file up to one byte past the size limit, failing
// with ctx's error once ctx ends.
func (jf *jarFile) reader(ctx context.Context) io.Reader {
	return &ctxReader{ctx: ctx, r: io.LimitReader(jf.f, jf.max+1)}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > 1<<20 {
		p = p[:1<<20]
	}
	return c.r.Read(p)
}

// digest is the SHA-256 of file's content, hex-encoded, read once per
// change of the file (its name, size and modification time).
func (j *Jars) digest(ctx context.Context, file string) (string, error) {
	jf, err := j.open(file)
	if err != nil {
		return "", err
	}
	defer jf.f.Close()
	if d, ok := j.cache().Load(jf.key); ok {
		return d.(string), nil
	}
	h := sha256.New()
	if _, err := jf.copy(ctx, h); err != nil {
		return "", fmt.Errorf("lifecycle: reading jar file %q in %s: %w", file, j.String(), err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	j.cache().Store(jf.key, d)
	return d, nil
}

// Uploads of jar files are named by their content: "flinkkit-", the
// first 32 hex digits of the SHA-256 of the jar, and then "-" and the
// file's base name for an upload any Controller may run (shared), or "."
// and the file's base name for one its caller owns (Jars.Upload), which
// no Controller runs. A Controller that would upload a jar file the
// cluster lists a shared upload of runs that upload instead; a jar
// rebuilt under the same file name holds another content, and is a new
// upload.

// jarPrefix begins the name of every upload of Jars.
const jarPrefix = "flinkkit-"

// digestLen is how many hex digits of the content's SHA-256 an upload's
// name holds.
const digestLen = 32

// sharedJarName is the name of the shared upload of a file named file
// whose content has the hex SHA-256 digest.
func sharedJarName(digest, file string) string {
	return jarPrefix + digest[:digestLen] + "-" + file
}

// ownJarName is the name of an upload its caller owns (Jars.Upload) of a
// file named file whose content has the hex SHA-256 digest.
func ownJarName(digest, file string) string {
	return jarPrefix + digest[:digestLen] + "." + file
}

// JarNameDigest is the first 32 hex digits of the SHA-256 of the content
// of the jar named name, if Jars uploaded it (its name says its
// content), and whether that upload is shared (any Controller may run
// it) rather than its caller's own (Jars.Upload); an empty digest: name
// is not the name of an upload of Jars.
func JarNameDigest(name string) (digest string, shared bool) {
	rest, ok := strings.CutPrefix(name, jarPrefix)
	if !ok || len(rest) < digestLen+2 || (rest[digestLen] != '-' && rest[digestLen] != '.') {
		return "", false
	}
	for _, c := range rest[:digestLen] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return rest[:digestLen], rest[digestLen] == '-'
}

// jarIDDigest is JarNameDigest of the name Flink gave the upload id
// (its ids are a random part, "_" and the uploaded file's name).
func jarIDDigest(id flinkapi.JarID) (digest string, shared bool) {
	_, name, ok := strings.Cut(string(id), "_")
	if !ok {
		return "", false
	}
	return JarNameDigest(name)
}

// JarSharing is implemented by a client whose shared uploads other
// programs also run and delete when no one uses them (as package fleet's
// clients of a cluster do). A Controller's look-up of a shared upload of
// a jar file's content and, without one, its upload are made within
// ShareJar: find returns the upload the Controller is to run (or ""),
// whether find uploaded it, and its error. ShareJar returns what find
// returned; it may record that the upload is in use, and hold what keeps
// it from being deleted meanwhile. A client of a Controller that records
// its requests is looked through for it.
type JarSharing interface {
	ShareJar(ctx context.Context, find func() (jar flinkapi.JarID, uploaded bool, err error)) (flinkapi.JarID, error)
}

// share runs find within api's ShareJar, if it has one.
func share(ctx context.Context, api API, find func() (flinkapi.JarID, bool, error)) (flinkapi.JarID, error) {
	if s, ok := unrecorded(api).(JarSharing); ok {
		return s.ShareJar(ctx, find)
	}
	id, _, err := find()
	return id, err
}

// Upload uploads the jar file through api, read from one open file of
// the source, and returns the id Flink gave it; the file is checked as
// every read of Jars is. The upload is named by its content as the
// caller's own: no Controller runs it. The caller owns the upload: delete
// it (API.DeleteJar) when it is no longer needed.
func (j *Jars) Upload(ctx context.Context, api API, file string) (flinkapi.JarID, error) {
	jf, err := j.open(file)
	if err != nil {
		return "", err
	}
	defer jf.f.Close()
	d, err := j.digestOf(ctx, jf, file)
	if err != nil {
		return "", err
	}
	return j.send(ctx, api, jf, ownJarName(d, path.Base(jf.name)))
}

// upload returns an upload of file on api's cluster for a Controller to
// run: the newest shared upload of the same content the cluster lists
// (one GET /jars), or else a new shared upload of file, read from one
// open file of the source (its digest is read first, from the same open
// file).
func (j *Jars) upload(ctx context.Context, api API, file string) (flinkapi.JarID, error) {
	jf, err := j.open(file)
	if err != nil {
		return "", err
	}
	defer jf.f.Close()
	return share(ctx, api, func() (flinkapi.JarID, bool, error) {
		d, err := j.digestOf(ctx, jf, file)
		if err != nil {
			return "", false, err
		}
		return j.findOrSend(ctx, api, jf, d, "")
	})
}

// listedOrUploaded checks, before a run uses it, that the cluster still
// lists jar, an upload of file made (or found) earlier: jar if it does;
// else a shared upload of file (listed or new) if file still holds the
// content jar's name says, and an error matching errJarGone if it holds
// another or jar's name says none.
func (j *Jars) listedOrUploaded(ctx context.Context, api API, file string, jar flinkapi.JarID) (flinkapi.JarID, error) {
	jf, err := j.open(file)
	if err != nil {
		return "", err
	}
	defer jf.f.Close()
	return share(ctx, api, func() (flinkapi.JarID, bool, error) {
		want, _ := jarIDDigest(jar)
		if want == "" {
			// Nothing says what the upload held: it is looked up alone.
			want = "-"
		}
		d, err := j.digestOf(ctx, jf, file)
		if err != nil {
			return "", false, err
		}
		id, uploaded, err := j.findOrSend(ctx, api, jf, d, jar)
		switch {
		case err != nil || id == jar:
			return id, uploaded, err
		case !strings.HasPrefix(d, want):
			return "", false, fmt.Errorf("%w: the upload %s was deleted, and the jar file %q holds another build (SHA-256 %s)", errJarGone, jar, file, shortDigest(d))
		}
		return id, uploaded, nil
	})
}

// errJarGone is matched by the error of an upload to run that the
// cluster no longer lists, when the jar file holds another build.
var errJarGone = errors.New("lifecycle: the jar to run is gone")

// findOrSend looks up the cluster's jars: jar, if it lists it (jar set);
// else its newest shared upload of digest's content; else, if the
// content is that the caller asked for (no jar, or jar's name says
// digest), a new shared upload of jf. It reports whether it uploaded.
func (j *Jars) findOrSend(ctx context.Context, api API, jf *jarFile, digest string, jar flinkapi.JarID) (flinkapi.JarID, bool, error) {
	list, err := api.ListJars(ctx)
	if err != nil {
		return "", false, err
	}
	var found *flinkapi.Jar
	for i := range list {
		if jar != "" && list[i].ID == jar {
			return jar, false, nil
		}
		if d, shared := JarNameDigest(list[i].Name); shared && d == digest[:digestLen] && (found == nil || list[i].Uploaded.After(found.Uploaded)) {
			found = &list[i]
		}
	}
	if want, _ := jarIDDigest(jar); jar != "" && want != digest[:digestLen] {
		return "", false, nil // the caller decides what another content means
	}
	if found != nil {
		return found.ID, false, nil
	}
	id, err := j.send(ctx, api, jf, sharedJarName(digest, path.Base(jf.name)))
	return id, err == nil, err
}

// digestOf is the digest of jf's content, read from jf (once per
// upload, whatever the cache holds: a file rewritten with the same size
// within the file system's time resolution keeps its key) and recorded
// as the file's; jf is then read again from its start.
func (j *Jars) digestOf(ctx context.Context, jf *jarFile, file string) (string, error) {
	h := sha256.New()
	if _, err := jf.copy(ctx, h); err != nil {
		return "", fmt.Errorf("lifecycle: reading jar file %q in %s: %w", file, j.String(), err)
	}
	seeker, ok := jf.f.(io.Seeker)
	if !ok {
		return "", fmt.Errorf("lifecycle: jar file %q in %s cannot be read again from its start", file, j.String())
	}
	if _, err := seeker.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("lifecycle: reading jar file %q in %s again: %w", file, j.String(), err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	j.cache().Store(jf.key, d)
	return d, nil
}

// send uploads jf's content through api under name, bounded by the
// source's MaxSize.
func (j *Jars) send(ctx context.Context, api API, jf *jarFile, name string) (flinkapi.JarID, error) {
	lr := &limitCheck{r: jf.reader(ctx), max: jf.max, name: jf.name}
	id, err := api.UploadJarReader(ctx, name, lr)
	if lr.err != nil {
		return id, lr.err
	}
	return id, err
}

// limitCheck fails a read past max bytes.
type limitCheck struct {
	r    io.Reader
	n    int64
	max  int64
	name string
	err  error
}

func (l *limitCheck) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		l.err = fmt.Errorf("%w: %w: job.jarFile %q grew past %d bytes while read", ErrInvalidSpec, ErrJarRefused, l.name, l.max)
		return 0, l.err
	}
	if err != nil && err != io.EOF {
		l.err = err
	}
	return n, err
}
