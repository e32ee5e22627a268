package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/redact"
)

// Secrets gives the values of the secrets that a job's arguments name
// (Env.Secrets). An argument names one with ${secret:NAME}, alone or
// within other text ("--password=${secret:db/password}"); NAME is letters,
// digits, '.', '_', '-' and '/', starts with a letter or digit, and has no
// ".." part. What a name means is the implementation's: a key of a
// Kubernetes Secret, a file in a directory, an entry of a vault.
//
// A value is read when it is needed: to start a job (the jar run request
// carries it, and nothing else does: the status, the operations' records
// and every message keep the placeholder), to plan one (the preflight),
// and to take it out of what Flink reports about the job (its exceptions
// and failure causes, which often echo a program's arguments). Secret
// must be safe for concurrent use, and its error must not hold the value.
type Secrets interface {
	Secret(ctx context.Context, name string) (string, error)
}

// SecretMap is a Secrets of fixed values, by name.
type SecretMap map[string]string

// Secret returns the value of name, or an error naming it if m has none.
func (m SecretMap) Secret(_ context.Context, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("no secret %q", name)
	}
	return v, nil
}

// ErrSecretUnavailable is matched by the error of a request that needs
// the value of a secret that Env.Secrets did not give. The job it would
// have started is not started; the Controller's actions check every
// secret before they stop the old job, and end Blocked, with nothing
// stopped, when one is missing.
var ErrSecretUnavailable = errors.New("lifecycle: secret unavailable")

// deployerSecrets says why a job started by a Deployer takes no secret
// arguments.
const deployerSecrets = "which only a session cluster takes: a Deployer would have to keep their values in the cluster it creates"

const (
	secretOpen  = "${secret:"
	secretClose = "}"
)

// secretNames returns the names of the secrets args name, each once, in
// the order they first appear, and an error naming each argument (by its
// index, never its text) whose reference is malformed.
func secretNames(args []string) ([]string, error) {
	var names []string
	var errs []error
	for i, a := range args {
		rest := a
		for {
			at := strings.Index(rest, secretOpen)
			if at < 0 {
				break
			}
			rest = rest[at+len(secretOpen):]
			end := strings.Index(rest, secretClose)
			if end < 0 {
				errs = append(errs, fmt.Errorf("job.args[%d]: a ${secret: without its closing }", i))
				break
			}
			name := rest[:end]
			rest = rest[end+len(secretClose):]
			if err := checkSecretName(name); err != nil {
				errs = append(errs, fmt.Errorf("job.args[%d]: %w", i, err))
				continue
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names, errors.Join(errs...)
}

// checkSecretName reports what is wrong with the name of a secret.
func checkSecretName(name string) error {
	if name == "" {
		return errors.New("${secret:} names no secret")
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && strings.ContainsRune("._-/", r)
		if !ok {
			return fmt.Errorf("secret name %q: want letters, digits, '.', '_', '-' and '/', starting with a letter or digit", truncateText(name, 64))
		}
	}
	if slices.Contains(strings.Split(name, "/"), "..") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return fmt.Errorf("secret name %q: no empty or \"..\" part", name)
	}
	return nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// secretScope holds what one call (a Controller's, an operation's Step)
// knows of the secrets its job's arguments name: where their values come
// from and the values read so far. It is carried in the call's context.
type secretScope struct {
	src Secrets
	mu  sync.Mutex
	// names are every secret the job's arguments name: the spec's and
	// those of the templates the status records, whose values may have
	// reached Flink before.
	names []string
	vals  map[string]string
	set   *redact.Set // of vals, built when vals grew
}

type secretsKey struct{}

// withSecrets returns ctx carrying the secrets that the argument lists
// name, read from src. A context that carries some already (an operation
// stepped by the Controller) keeps its scope, which learns the names.
func withSecrets(ctx context.Context, src Secrets, argLists ...[]string) context.Context {
	var names []string
	for _, args := range argLists {
		n, _ := secretNames(args) // malformed references name nothing to hide
		for _, name := range n {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if s := scopeOf(ctx); s != nil {
		s.mu.Lock()
		for _, n := range names {
			if !slices.Contains(s.names, n) {
				s.names = append(s.names, n)
			}
		}
		s.mu.Unlock()
		return ctx
	}
	if len(names) == 0 && src == nil {
		return ctx
	}
	return context.WithValue(ctx, secretsKey{}, &secretScope{src: src, names: names})
}

func scopeOf(ctx context.Context) *secretScope {
	s, _ := ctx.Value(secretsKey{}).(*secretScope)
	return s
}

// value returns the value of the secret name, read once per scope.
func (s *secretScope) value(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	v, ok := s.vals[name]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	if s.src == nil {
		return "", fmt.Errorf("%w: the job's arguments name the secret %q, and no Env.Secrets is set to read it from", ErrSecretUnavailable, name)
	}
	v, err := s.src.Secret(ctx, name)
	if err != nil {
		return "", fmt.Errorf("%w: the secret %q that the job's arguments name: %v", ErrSecretUnavailable, name, err)
	}
	s.mu.Lock()
	if s.vals == nil {
		s.vals = map[string]string{}
	}
	s.vals[name], s.set = v, nil
	if !slices.Contains(s.names, name) {
		s.names = append(s.names, name)
	}
	s.mu.Unlock()
	return v, nil
}

// redactor returns the set of the values of every secret the scope
// names, reading those not read yet, and the name of one it cannot read
// now ("" when it read all): a value sent to Flink in an earlier call may
// still be echoed, and is not known to take it out.
func (s *secretScope) redactor(ctx context.Context) (*redact.Set, string) {
	if s == nil {
		return nil, ""
	}
	s.mu.Lock()
	names := slices.Clone(s.names)
	s.mu.Unlock()
	unread := ""
	for _, n := range names {
		if _, err := s.value(ctx, n); err != nil && unread == "" {
			unread = n
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = redact.New(slices.Sorted(maps.Values(s.vals))...)
	}
	return s.set, unread
}

// withheld is what stands in place of a text of Flink's about the job
// while a secret its arguments name cannot be read: the text may echo
// the secret's value, which cannot be taken out.
func withheld(name string) string {
	return fmt.Sprintf("(withheld: the secret %q that the job's arguments name cannot be read now, so its value cannot be taken out of this text)", name)
}

// missingSecret returns why args cannot be run now: a secret they name
// that cannot be read, or secrets where the job is started by a Deployer
// (which would have to keep them in what it creates); "" when every one
// can be.
func missingSecret(ctx context.Context, args []string, deployer bool) string {
	names, err := secretNames(args)
	if err != nil {
		return err.Error()
	}
	if len(names) == 0 {
		return ""
	}
	if deployer {
		return "the job's arguments name secrets, " + deployerSecrets
	}
	s := scopeOf(ctx)
	if s == nil {
		s = &secretScope{}
	}
	for _, n := range names {
		if _, err := s.value(ctx, n); err != nil {
			return err.Error()
		}
	}
	return ""
}

// resolveArgs returns args with every ${secret:NAME} replaced by the
// secret's value, and the values it put in (for the request's Secrets);
// args themselves when they name none.
func resolveArgs(ctx context.Context, args []string) ([]string, []string, error) {
	names, err := secretNames(args)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if len(names) == 0 {
		return args, nil, nil
	}
	s := scopeOf(ctx)
	if s == nil {
		s = &secretScope{}
	}
	vals := make([]string, 0, len(names))
	pairs := make([]string, 0, 2*len(names))
	for _, n := range names {
		v, err := s.value(ctx, n)
		if err != nil {
			return nil, nil, err
		}
		vals = append(vals, v)
		pairs = append(pairs, secretOpen+n+secretClose, v)
	}
	r := strings.NewReplacer(pairs...) // one pass: a value holding a reference stays as it is
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out, vals, nil
}

// resolveInto puts the values of the secrets *args name into *args and
// appends them to *secrets (a request's Secrets), for the jar run and the
// jar plan alike; nothing changes when the arguments name none.
func resolveInto(ctx context.Context, args, secrets *[]string) error {
	resolved, vals, err := resolveArgs(ctx, *args)
	if err != nil || len(vals) == 0 {
		return err
	}
	*args, *secrets = resolved, append(slices.Clone(*secrets), vals...)
	return nil
}

// cleanExceptions returns e with the values of the scope's secrets taken
// out of its texts (a copy when there is any to take out).
// A secret that cannot be read leaves the texts withheld.
func cleanExceptions(ctx context.Context, e *flinkapi.JobExceptions) *flinkapi.JobExceptions {
	set, unread := scopeOf(ctx).redactor(ctx)
	if e == nil || set.Empty() && unread == "" {
		return e
	}
	clean := func(text string) string { return set.Clean(text, redact.Mark) }
	if unread != "" {
		clean = func(string) string { return withheld(unread) }
	}
	cp := *e
	cp.Entries = cleanEntries(clean, e.Entries)
	return &cp
}

func cleanEntries(clean func(string) string, es []flinkapi.ExceptionEntry) []flinkapi.ExceptionEntry {
	if es == nil {
		return nil
	}
	out := make([]flinkapi.ExceptionEntry, len(es))
	for i, x := range es {
		x.Message = clean(x.Message)
		x.StackTrace = clean(x.StackTrace)
		x.TaskName = clean(x.TaskName)
		x.Concurrent = cleanEntries(clean, x.Concurrent)
		out[i] = x
	}
	return out
}

// cleanResult returns r with the values of the scope's secrets taken out
// of its failure cause (a copy when there is any to take out); a secret
// that cannot be read leaves the cause withheld.
func cleanResult(ctx context.Context, r *flinkapi.ExecutionResult) *flinkapi.ExecutionResult {
	set, unread := scopeOf(ctx).redactor(ctx)
	if r == nil || r.Failure == nil || set.Empty() && unread == "" {
		return r
	}
	cp := *r
	if unread != "" {
		cp.Failure = &flinkapi.FailureCause{Class: r.Failure.Class, StackTrace: withheld(unread)}
		return &cp
	}
	cp.Failure = &flinkapi.FailureCause{Class: r.Failure.Class, StackTrace: set.Clean(r.Failure.StackTrace, redact.Mark)}
	return &cp
}

// cleanError returns err with the values of the scope's secrets taken
// out of its text, for a client other than flinkapi's that does not
// honour a request's Secrets; it still matches what err matched.
func cleanError(ctx context.Context, err error) error {
	set, _ := scopeOf(ctx).redactor(ctx) // (a call that reached Flink read them all)
	if err == nil || set.Empty() || !set.Shows(err.Error()) {
		return err
	}
	return &secretFreeError{msg: set.Clean(err.Error(), redact.Mark), err: err, set: set}
}

// secretFreeError is an error whose text had secrets taken out. It
// matches (errors.Is) what the original matched but does not unwrap to
// it, whose text shows them; an *flinkapi.APIError behind it is found
// (errors.As) as a copy with its texts cleaned.
type secretFreeError struct {
	msg string
	err error
	set *redact.Set
}

func (e *secretFreeError) Error() string        { return e.msg }
func (e *secretFreeError) Is(target error) bool { return errors.Is(e.err, target) }

// As finds an *flinkapi.APIError behind the error, its texts cleaned as
// the error's are.
func (e *secretFreeError) As(target any) bool {
	t, ok := target.(**flinkapi.APIError)
	if !ok {
		return false
	}
	var ae *flinkapi.APIError
	if !errors.As(e.err, &ae) {
		return false
	}
	cp := *ae
	cp.Errors = make([]string, len(ae.Errors))
	for i, m := range ae.Errors {
		cp.Errors[i] = e.set.Clean(m, redact.Mark)
	}
	cp.StackTrace = e.set.Clean(ae.StackTrace, redact.Mark)
	*t = &cp
	return true
}
