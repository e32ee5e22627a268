package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// FuzzDurationJSON feeds arbitrary bytes to Duration.UnmarshalJSON: it
// must not panic, must accept only JSON strings (or null), and what it
// accepts must survive a round trip through MarshalJSON.
func FuzzDurationJSON(f *testing.F) {
	for _, s := range []string{`"90s"`, `"1h30m"`, `"-5m"`, `"0"`, `90`, `null`, `"\u0039\u0030s"`, `"9223372036854775807ns"`,
		`"9223372036854775808ns"`, `"1.5h"`, `".5s"`, `""`, `"`, `{}`, `[]`, `"1h1h1h"`, `"+3s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Duration
		err := d.UnmarshalJSON(data)
		if err != nil {
			if d != 0 {
				t.Fatalf("error %v but value changed to %v", err, d)
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		var s string
		if json.Unmarshal(data, &s) != nil && string(trimSpace(data)) != "null" {
			t.Fatalf("accepted %q, which is not a JSON string", data)
		}
		out, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON(%v): %v", d, err)
		}
		var back Duration
		if err := back.UnmarshalJSON(out); err != nil || back != d {
			t.Fatalf("round trip of %q: %s -> %v, %v", data, out, back, err)
		}
		if p, err := parseDuration(d.String()); err != nil || p != d {
			t.Fatalf("ParseDuration(%q) = %v, %v", d.String(), p, err)
		}
	})
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// FuzzPolicyJSON reads policies from arbitrary JSON, as a resource's spec
// would hold them, and checks that whatever is accepted either fails
// Validate or yields decisions that keep every invariant.
func FuzzPolicyJSON(f *testing.F) {
	for _, s := range []string{
		`{"mode":"Savepoint","maxStateAge":"6h","fallbackToLastState":true}`,
		`{"mode":"LastState","maxStateAge":"1ns","allowStartWithoutState":true,"savepointAttempts":5}`,
		`{"mode":"Stateless","transitionTimeout":"-1s"}`,
		`{"mode":"FromLatestState","maxRestarts":2,"window":"10m","backoff":"0s"}`,
		`{"maxStateAge":"2562047h47m16.854775807s","savepointDeadline":"2562047h"}`,
		`{"formatVersion":2,"mode":"Stateless","allowStartWithoutState":true}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	observations := []Observations{
		withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), 2*time.Hour), time.Minute),
		withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour),
		withInFlight(observe(flinkapi.JobRunning), 11*time.Minute, -time.Minute),
		withInFlight(withCheckpoint(observe(""), 3*time.Minute), time.Minute, time.Minute),
		observe(flinkapi.JobCancelling),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var up UpdatePolicy
		var rp RestartPolicy
		upErr := json.Unmarshal(data, &up)
		rpErr := json.Unmarshal(data, &rp)
		for _, obs := range observations {
			if upErr == nil {
				d := EvaluateUpdate(up, obs, now)
				if v := violations(true, up, RestartPolicy{}, obs, now, d); len(v) > 0 {
					t.Fatalf("policy %s: %v (%s)", data, v, d.Message())
				}
			}
			if rpErr == nil {
				d := EvaluateRestart(rp, obs, now)
				if v := violations(false, UpdatePolicy{}, rp, obs, now, d); len(v) > 0 {
					t.Fatalf("policy %s: %v (%s)", data, v, d.Message())
				}
			}
		}
	})
}

// FuzzEvaluate builds observations from fuzzed numbers, so that the fuzzer
// can search the decision logic for a violated invariant.
func FuzzEvaluate(f *testing.F) {
	f.Add(uint8(2), uint8(2), uint8(0), int64(time.Minute), int64(time.Hour), int64(time.Minute), int64(5*time.Minute), int64(2*time.Minute), uint16(0b1011), uint8(1), uint8(1))
	f.Add(uint8(1), uint8(4), uint8(2), int64(25*time.Hour), int64(0), int64(-time.Minute), int64(6*time.Minute), int64(11*time.Minute), uint16(0b0110), uint8(2), uint8(3))
	f.Add(uint8(3), uint8(0), uint8(6), int64(time.Hour), int64(time.Hour), int64(0), int64(0), int64(0), uint16(0xffff), uint8(0), uint8(0))
	states := append([]flinkapi.JobState{""}, allJobStates...)
	states = append(states, "NEW")
	f.Fuzz(func(t *testing.T, mode, jobState, spState uint8, spAge, cpAge, deadlineIn, stateFor, triggered int64,
		flags uint16, attempts, restarts uint8) {
		modes := []UpgradeMode{"", UpgradeStateless, UpgradeSavepoint, UpgradeLastState}
		up := UpdatePolicy{
			Mode:                   modes[int(mode)%len(modes)],
			MaxStateAge:            Duration(time.Duration(restarts) * 10 * time.Minute),
			AllowNonRestoredState:  flags&1 != 0,
			FallbackToLastState:    flags&2 != 0,
			AllowStartWithoutState: flags&4 != 0,
			SavepointAttempts:      int(attempts % 4),
		}
		rp := RestartPolicy{Mode: RestartFromLatestState, MaxRestarts: int(attempts % 5), MaxStateAge: up.MaxStateAge}
		obs := observe(states[int(jobState)%len(states)])
		obs.JobManagerReachable = flags&8 == 0
		obs.SpecChanged = flags&16 == 0
		obs.FirstDeploy = flags&32 != 0
		obs.LastContact = now.Add(-time.Duration(stateFor))
		if obs.Job != nil {
			obs.Job.StateSince = now.Add(-time.Duration(stateFor))
			if flags&64 != 0 {
				obs.Job.StateSince = time.Time{}
			}
		}
		if flags&128 == 0 {
			obs.LatestSavepoint = savepoint.Record{Location: "s3://sp/f", Time: now.Add(-time.Duration(spAge))}
		}
		if flags&256 == 0 {
			obs.LatestCheckpoint = Checkpoint{Path: "s3://cp/f", Time: now.Add(-time.Duration(cpAge))}
		}
		if int(spState)%len(savepointStates) != 0 {
			obs.Savepoint = savepoint.Status{
				State:       savepointStates[int(spState)%len(savepointStates)],
				TriggerTime: now.Add(-time.Duration(triggered)),
				Deadline:    now.Add(time.Duration(deadlineIn)),
			}
			if flags&512 != 0 {
				obs.Savepoint.Location = "s3://sp/op"
			}
			if flags&1024 != 0 {
				obs.Savepoint.Deadline = time.Time{}
			}
		}
		obs.SavepointAttempts = int(attempts % 4)
		obs.Restarts = int(restarts % 6)
		obs.LastRestart = now.Add(-time.Duration(triggered))

		d := EvaluateUpdate(up, obs, now)
		if v := violations(true, up, RestartPolicy{}, obs, now, d); len(v) > 0 {
			t.Fatalf("update: %v\npolicy %+v\nobs %s\n%s", v, up, dump(obs), d.Message())
		}
		d = EvaluateRestart(rp, obs, now)
		if v := violations(false, UpdatePolicy{}, rp, obs, now, d); len(v) > 0 {
			t.Fatalf("restart: %v\npolicy %+v\nobs %s\n%s", v, rp, dump(obs), d.Message())
		}
	})
}
