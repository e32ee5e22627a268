package randdriver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The secret of a run whose job names one (--label ${secret:run/label}),
// and how long it stays unreadable at most: then it is back.
const (
	secretName    = "run/label"
	secretRef     = "${secret:" + secretName + "}"
	secretGoneFor = 3 * time.Minute
)

// useSecret makes the spec's job name a secret, whose value is the
// run's own.
func (d *driver) useSecret(spec *lifecycle.JobSpec) {
	d.secret = fmt.Sprintf("rd-s3cr3t-%d-%x", d.res.Seed, d.r.Uint32())
	d.secrets = lifecycle.SecretMap{secretName: d.secret}
	spec.Job.Args = append(spec.Job.Args, "--label", secretRef)
}

// namesSecret reports whether args name the run's secret.
func namesSecret(args []string) bool { return slices.Contains(args, secretRef) }

// secretEvent draws an event of the secret: it becomes unreadable (a
// Secret deleted, a vault down), readable again, or the job fails with
// a message that names it, as Flink echoes a program's arguments.
func (d *driver) secretEvent() {
	switch {
	case d.r.IntN(2) == 0:
		live := d.ownLive()
		for id, st := range live {
			if st != flinkapi.JobRunning {
				continue
			}
			if err := d.srv.FailJob(id, "java.lang.IllegalStateException: cannot reach the sink with label "+d.secret); err == nil {
				d.tracef("event: the job %s fails with a message naming the secret", id)
				d.res.Seen["failures naming a secret"]++
				return
			}
		}
		d.tracef("event: no running job to fail naming the secret")
	case d.secretGone.IsZero():
		delete(d.secrets, secretName)
		d.secretGone = d.now()
		d.res.Seen["secrets unreadable"]++
		d.tracef("event: the secret %s becomes unreadable", secretName)
	default:
		d.secretBack()
	}
}

// secretBack makes the secret readable again.
func (d *driver) secretBack() {
	d.secrets[secretName] = d.secret
	d.secretGone = time.Time{}
	d.tracef("event: the secret %s is readable again", secretName)
}

// secretTick brings the secret back once it was gone for secretGoneFor:
// the checks of runs that stay down (a failed job not restarted, a
// blocked change) hold then.
func (d *driver) secretTick() {
	if !d.secretGone.IsZero() && d.now().Sub(d.secretGone) >= secretGoneFor {
		d.secretBack()
	}
}

// replacing are the actions that start a job of a template by a jar run:
// each checks the template's secrets before it touches the old job.
var replacing = map[lifecycle.JobAction]bool{
	lifecycle.ActionDeploy: true, lifecycle.ActionUpgrade: true, lifecycle.ActionRestart: true, lifecycle.ActionHealthRestart: true,
	lifecycle.ActionRollback: true, lifecycle.ActionBlueGreen: true, lifecycle.ActionCanary: true,
}

// checkSecrets checks a call of a run whose job names a secret: its
// status, error and requests (SecretShown, SecretMissingActed).
func (d *driver) checkSecrets(before, st lifecycle.JobStatus, callErr error, sent []flinktest.Request, gone bool) {
	if d.secret == "" {
		return
	}
	b, _ := json.Marshal(st)
	if i := strings.Index(string(b), d.secret); i >= 0 {
		d.violate(SecretShown, "the status shows the secret's value: …%s…", string(b)[max(0, i-120):i])
	}
	if callErr != nil && strings.Contains(callErr.Error(), d.secret) {
		d.violate(SecretShown, "the call's error shows the secret's value: %v", strings.ReplaceAll(callErr.Error(), d.secret, "<secret>"))
	}
	for _, q := range sent {
		if (q.Route == "POST /jars/:jarid/run" || q.Route == "POST /jars/:jarid/plan") && strings.Contains(q.Body, "${secret:") {
			d.violate(SecretShown, "%s carried a placeholder, not the secret's value: %.200s", q.Route, q.Body)
		}
		if gone && q.Route == "POST /jars/:jarid/run" && strings.Contains(q.Body, "--label") {
			d.violate(SecretMissingActed, "a jar run was sent while the secret was unreadable: %.200s", strings.ReplaceAll(q.Body, d.secret, "<secret>"))
		}
	}
	// An action that starts a job of a template naming the secret, begun
	// in this call while the secret was unreadable, ends Blocked at once,
	// having stopped nothing.
	started := !before.InFlight() && actionKey(st) != actionKey(before) // as track sees a start
	if !gone || !started || !replacing[st.Action] || !namesSecret(st.Target.Args) {
		return
	}
	if !st.Progress.Done() || st.Progress.Outcome != lifecycle.OutcomeBlocked {
		d.violate(SecretMissingActed, "%s started while the secret was unreadable and is %s %s, not Blocked", st.Action, st.Progress.Phase, st.Progress.Outcome)
	}
	for _, q := range sent {
		switch q.Route {
		case "POST /jobs/:jobid/stop", "PATCH /jobs/:jobid", "POST /jobs/:jobid/savepoints":
			d.violate(SecretMissingActed, "%s started while the secret was unreadable sent %s", st.Action, q.Route)
		}
	}
}
