package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestApplySecretArgs: a job file's args name secrets that --secret-dir
// holds; Flink gets their values, and nothing flinkctl prints or stores
// shows them, also when Flink echoes them. Without --secret-dir, or
// with a name it does not hold, the job is not started and flinkctl says
// which secret is missing.
func TestApplySecretArgs(t *testing.T) {
	const value = "s3cr3t-out-0931"
	f := newFixture(t)
	secrets := filepath.Join(f.dir, "secrets")
	if err := os.MkdirAll(filepath.Join(secrets, "tenant"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "tenant", "out"), []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := f.jobFile("counter", "/out/${secret:tenant/out}", "")
	var outputs []string
	run := func(args ...string) result {
		r := f.run(args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}

	r := run("apply", "-f", file)
	wantCode(t, r, exitBlocked, "tenant/out")
	if !strings.Contains(r.stderr, "--secret-dir") || len(f.running()) != 0 {
		t.Fatalf("apply without --secret-dir: %q, running %v", r.stderr, f.running())
	}
	r = run("--secret-dir", secrets, "apply", "-f", file, "--timeout", "1m")
	wantCode(t, r, exitOK, "")
	jobs := f.running()
	if len(jobs) != 1 || !slices.Contains(jobs[0].ProgramArgs, "/out/"+value) {
		t.Fatalf("running %+v, want one job with the secret's value (without its newline) in its args", jobs)
	}
	// The job fails with a cause that echoes the value; status shows it.
	if err := f.srv.FailJob(jobs[0].ID, "cannot write /out/"+value+"/part-0"); err != nil {
		t.Fatal(err)
	}
	f.srv.Clock().Advance(4_000_000_000)
	r = run("--secret-dir", secrets, "status", "counter", "-o", "json")
	r2 := run("--secret-dir", secrets, "apply", "-f", file, "--timeout", "1m")
	_ = r2
	var stored []string
	_ = filepath.WalkDir(filepath.Join(f.dir, "state"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			stored = append(stored, p+": "+string(b))
		}
		return nil
	})
	all := strings.Join(append(outputs, stored...), "\n")
	if strings.Contains(all, value) {
		t.Fatalf("an output or a stored file shows the secret:\n%s", all)
	}
	if !strings.Contains(all, "cannot write /out/xxxxx/part-0") || !strings.Contains(all, "${secret:tenant/out}") {
		t.Fatalf("the failure cause and the placeholder are not shown, so the redaction is not shown:\n%s", all)
	}

	// A name the directory does not hold, and one that leaves it.
	for _, name := range []string{"tenant/gone", "../secrets/tenant/out"} {
		other := f.jobFile("other", "/out/${secret:"+name+"}", "")
		r = run("--secret-dir", secrets, "apply", "-f", other, "--timeout", "1m")
		if r.code == exitOK || !strings.Contains(r.stderr, name) {
			t.Errorf("apply naming %s: exit %d, %q; want a refusal naming it", name, r.code, r.stderr)
		}
	}
}
