package lifecycle

import (
	"context"
	"fmt"
	"time"
)

// The check of an Upgrade or Restart that the upload it runs is still
// the build it stands for (PhaseCheckJar).

// jarChanged is why the jar file a replacer would upload does not hold
// the build its template names (digest), if it does not; empty: it
// does, or nothing is known to compare (no digest, a jar id, a file that
// cannot be read: the upload says so).
func (r *replacer) jarChanged(ctx context.Context) string {
	file := r.submit.JarFile
	if r.digest == "" || r.submit.JarID != "" || file == "" || r.deployer != nil {
		return ""
	}
	d, err := r.submit.Jars.digest(ctx, file)
	if err != nil || d == r.digest {
		return ""
	}
	return fmt.Sprintf("the jar file %s holds another build (SHA-256 %s) than the one to run (%s), and no upload of that build is known: "+
		"nothing was stopped or started", file, shortDigest(d), shortDigest(r.digest))
}

// checksJar reports whether r runs the recorded upload of the stable
// build (Upgrade.checkJar).
func (r *replacer) checksJar() bool {
	return r.checkJar && r.submit.JarID != ""
}

// stepCheckJar reads the cluster's jars (PhaseCheckJar): with the
// upload to run there, the operation goes on (begun); without it, it
// ends OutcomeJarChanged, nothing stopped or started. Reads that fail
// until the phase's deadline end it TimedOut, the old job untouched.
func (r *replacer) stepCheckJar(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	jar := r.submit.JarID
	jars, err := r.client.ListJars(ctx)
	if err != nil {
		p.Requests++
		p.LastError = "reading the cluster's jars: " + errMessage(err)
		if !now.Before(p.Deadline) {
			return finish(p, OutcomeTimedOut, "the deadline passed while looking up the jar to run, "+string(jar)+": "+p.LastError+
				"; nothing was stopped or started"), nil
		}
		return Result{RequeueAfter: r.timing.backoff(p.Requests)}, nil
	}
	p.Requests, p.LastError = 0, ""
	for _, j := range jars {
		if j.ID == jar {
			return r.begun(ctx, p, now)
		}
	}
	return finish(p, OutcomeJarChanged, fmt.Sprintf("the upload %s of the build to run (SHA-256 %s) was deleted, and the jar file %s holds another build: "+
		"nothing was stopped or started", jar, shortDigest(r.digest), r.submit.JarFile)), nil
}

// shortDigest is the first 12 characters of a digest, for messages.
func shortDigest(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
