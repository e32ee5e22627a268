package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
)

// TestDecodeSpecErrors checks the whole error of each bad spec: every
// fault, at its line, under the path the file writes.
func TestDecodeSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // the error's lines
	}{{
		name: "misspelt and mistyped fields",
		in: `job:
  jarFile: /jobs/orders.jar
  paralelism: 4
  parallelism: four
  args: [a, 1, true]
  flinkConfiguration:
    parallelism.default: 4
    nested: {a: 1}
update:
  maxStateAge: 90
restart:
  window: 5x
  Backoff: 1s
bounded: "yes"
autoscale:
  enabled: true
  minParallelism: 1.5
`,
		want: []string{
			`jobs/orders.yaml:3: job.paralelism: unknown field (did you mean "parallelism"?)`,
			`jobs/orders.yaml:4: job.parallelism: want a whole number, got "four"`,
			`jobs/orders.yaml:8: job.flinkConfiguration.nested: want a string, got a mapping`,
			`jobs/orders.yaml:10: update.maxStateAge: a duration must be a JSON string with a unit, such as "90s" or "1h30m"; got 90`,
			`jobs/orders.yaml:12: restart.window: duration "5x": want a number with a unit, such as "90s" or "1h30m"`,
			`jobs/orders.yaml:13: restart.Backoff: unknown field (did you mean "backoff"?)`,
			`jobs/orders.yaml:14: bounded: want true or false, got "yes"`,
			`jobs/orders.yaml:17: autoscale.minParallelism: want a whole number, got 1.5`,
		},
	}, {
		name: "JSON, lines and all",
		in: `{
  "job": {"jarFile": "x"},
  "savepoints": {"maxcount": 3, "interval": [1]},
  "unheardOf": 1,
  "restore": {"time": "yesterday"}
}`,
		want: []string{
			`jobs/orders.yaml:3: savepoints.maxcount: unknown field (did you mean "maxCount"?)`,
			`jobs/orders.yaml:3: savepoints.interval: a duration must be a JSON string with a unit, such as "90s" or "1h30m"; got [1]`,
			`jobs/orders.yaml:4: unheardOf: unknown field`,
			`jobs/orders.yaml:5: restore.time: want a time as RFC 3339 writes it, such as "2026-03-01T12:00:00Z", got "yesterday"`,
		},
	}, {
		name: "what validation refuses, at the field's line",
		in: `# orders
job:
  jarFile: /jobs/orders.jar
  parallelism: -4
update:
  mode: Sometimes
  savepointAttempts: -1
state: Bogus
blueGreen:
  canary: true
`,
		want: []string{
			`jobs/orders.yaml:4: job.parallelism: -4 must not be negative (0: the cluster's default)`,
			`jobs/orders.yaml:6: update.mode: "Sometimes": unknown upgrade mode; want Stateless, Savepoint or LastState`,
			`jobs/orders.yaml:7: update.savepointAttempts: "-1": must not be negative (0 means the default, 2)`,
			`jobs/orders.yaml:8: state: unknown state "Bogus"; want Running or Suspended`,
			`jobs/orders.yaml:10: blueGreen.canary: needs blueGreen.enabled`,
		},
	}, {
		name: "validation naming a field the file leaves out: the nearest one it writes",
		in:   "\njob:\n  entryClass: com.example.Main\n",
		want: []string{`jobs/orders.yaml:2: job: set jarFile or jarID`},
	}, {
		name: "a newer format",
		in:   "job: {jarFile: x}\nformatVersion: 99\n",
		want: []string{`jobs/orders.yaml:2: formatVersion: lifecycle.JobSpec: format version 99 is newer than this flinkkit reads (up to ` + fmt.Sprint(lifecycle.FormatVersion) + `): ` +
			`it was written by a later flinkkit; run that release or a later one, and do not write this value back with this one`},
	}, {
		name: "a key given twice, also through a merge",
		in:   "job:\n  <<: {jarFile: x, parallelism: 2}\n  parallelism: 3\n  parallelism: 4\n",
		want: []string{`jobs/orders.yaml:4: job.parallelism: given twice (first at line 3)`},
	}, {
		name: "two documents",
		in:   "job: {jarFile: x}\n---\njob: {jarFile: y}\n",
		want: []string{`jobs/orders.yaml:2: a second YAML document: a file holds one, without a '---' after it`},
	}, {
		name: "empty",
		in:   "# nothing here\n",
		want: []string{`jobs/orders.yaml: the file is empty`},
	}, {
		name: "null",
		in:   "# nothing here but\n~\n",
		want: []string{`jobs/orders.yaml:2: want a mapping, got null`},
	}, {
		name: "not a mapping",
		in:   "- job\n",
		want: []string{`jobs/orders.yaml:1: want a mapping, got a list`},
	}, {
		name: "not YAML",
		in:   "job:\n  args: [a,\n",
		want: []string{`jobs/orders.yaml:2: did not find expected node content`},
	}, {
		name: "an unknown tag, a key that is no plain value, a key of dots",
		in:   "job: !!set {jarFile: x}\n? [a]\n: 1\n\"job.x\": 1\n",
		want: []string{
			`jobs/orders.yaml:1: job: unknown tag !!set`,
			`jobs/orders.yaml:2: a key must be a plain value, got a list`,
			`jobs/orders.yaml:4: ["job.x"]: unknown field`,
		},
	}, {
		name: "out of range",
		in:   "job: {jarFile: x, parallelism: 9223372036854775808}\n",
		want: []string{`jobs/orders.yaml:1: job.parallelism: 9223372036854775808 is out of range`},
	}, {
		name: "an alias's value, at the alias",
		in:   "job:\n  jarFile: &j [x]\n  entryClass: *j\n",
		want: []string{
			`jobs/orders.yaml:2: job.jarFile: want a string, got a list`,
			`jobs/orders.yaml:3: job.entryClass: want a string, got a list`,
		},
	}, {
		name: "more than 20 errors",
		in:   strings.Repeat("x: 1\n", 22),
		want: func() []string {
			want := []string{"jobs/orders.yaml:1: x: unknown field"}
			for line := 2; line <= 20; line++ {
				want = append(want, "jobs/orders.yaml:"+itoa(line)+": x: given twice (first at line 1)")
			}
			return append(want, "jobs/orders.yaml: and 2 more errors")
		}(),
	}, {
		name: "an alias inside the value it names",
		in:   "job: &j\n  <<: *j\n  jarFile: x\n",
		want: []string{`jobs/orders.yaml:2: job: values nest more than 64 deep (an alias inside the value it names?)`},
	}, {
		name: "aliases expanding beyond reason",
		in: `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
update:
  maxStateAge: *f
`,
		want: []string{
			`jobs/orders.yaml:1: a: unknown field`,
			`jobs/orders.yaml:2: b: unknown field`,
			`jobs/orders.yaml:2: update.maxStateAge[0][8][9][9][9]: the file holds more than 100000 values once its aliases are expanded`,
			`jobs/orders.yaml:3: c: unknown field`,
			`jobs/orders.yaml:4: d: unknown field`,
			`jobs/orders.yaml:5: e: unknown field`,
			`jobs/orders.yaml:6: f: unknown field`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSpec("jobs/orders.yaml", []byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if d := cmp.Diff(tc.want, strings.Split(err.Error(), "\n")); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeSpecValidationErrorsMatch(t *testing.T) {
	_, err := DecodeSpec("a.yaml", []byte("job: {parallelism: -1}\n"))
	if !errors.Is(err, lifecycle.ErrInvalidSpec) {
		t.Errorf("%v: want ErrInvalidSpec", err)
	}
	_, err = DecodeSpec("a.yaml", []byte("job: {jarFile: x}\nformatVersion: 9999\n"))
	if !errors.Is(err, lifecycle.ErrUnknownFormat) || !errors.Is(err, lifecycle.ErrInvalidSpec) {
		t.Errorf("%v: want ErrUnknownFormat and ErrInvalidSpec", err)
	}
	_, err = DecodeSpec("a.yaml", []byte("job: {jarFile: x, parallelism: x}\n"))
	if err == nil || errors.Is(err, lifecycle.ErrInvalidSpec) {
		t.Errorf("%v: a decoding error, not ErrInvalidSpec", err)
	}
}

// TestDecodeSpecAllFields decodes the newest spec fixture of lifecycle,
// every field set, from its JSON and from the same spec written as YAML,
// and gets what encoding/json reads from it.
func TestDecodeSpecAllFields(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "lifecycle", "testdata", "golden", "jobspec-v"+itoa(lifecycle.FormatVersion)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var want lifecycle.JobSpec
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	want.FormatVersion = 0 // a spec file need not say
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	delete(generic, "formatVersion")
	asJSON, _ := json.MarshalIndent(generic, "", "  ")
	asYAML, err := yaml.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"orders.json": asJSON, "orders.yaml": asYAML} {
		got, err := DecodeSpec(name, in)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, in)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-json.Unmarshal +DecodeSpec):\n%s", name, d)
		}
	}
}

// TestDecodeSpecYAMLForms reads what YAML writes in ways JSON does not:
// anchors and merges, numbers where text is wanted, comments, block
// text, hexadecimal numbers, timestamps.
func TestDecodeSpecYAMLForms(t *testing.T) {
	in := `# the orders job
job: &job
  jarFile: /jobs/orders.jar
  parallelism: 0x10
  args:
    - --note
    - |
      two
      lines
  flinkConfiguration:
    parallelism.default: 4
    pipeline.object-reuse: true
    taskmanager.memory.managed.fraction: 0.4
restart:
  <<: &timing {window: 10m, backoff: 30s}
  maxRestarts: 3
update:
  mode: Savepoint
  maxStateAge: 1h
restore:
  path: s3://bucket/sp-1
  token: "1"
  time: 2026-03-01T12:00:00Z
rollback:
  enabled: true
  readinessTimeout: null
`
	got, err := DecodeSpec("orders.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: "/jobs/orders.jar", Parallelism: 16, Args: []string{"--note", "two\nlines\n"},
			FlinkConfiguration: map[string]string{"parallelism.default": "4", "pipeline.object-reuse": "true",
				"taskmanager.memory.managed.fraction": "0.4"}},
		Restart:  policy.RestartPolicy{Mode: policy.RestartFromLatestState, Window: policy.Duration(10 * time.Minute), Backoff: policy.Duration(30 * time.Second), MaxRestarts: 3},
		Update:   policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour)},
		Restore:  policy.RestoreRequest{Path: "s3://bucket/sp-1", Token: "1", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		Rollback: lifecycle.RollbackPolicy{Enabled: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDecodeClusters(t *testing.T) {
	got, err := DecodeClusters("clusters.yaml", []byte(`clusters:
  - name: eu-1
    url: https://flink-eu-1.example.com:8081
  - {name: us-1, url: "http://10.0.0.7:8081"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := ClusterList{Clusters: []Cluster{{Name: "eu-1", URL: "https://flink-eu-1.example.com:8081"}, {Name: "us-1", URL: "http://10.0.0.7:8081"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	_, err = DecodeClusters("clusters.yaml", []byte(`clusters:
  - name: eu-1
    url: https://flink-eu-1.example.com:8081
  - name: eu-1
    url: flink-eu-2:8081
  - name: ../x
    url: http://x
`))
	wantErr := []string{
		`clusters.yaml:4: clusters[1].name: "eu-1" is clusters[0]'s name too`,
		`clusters.yaml:5: clusters[1].url: "flink-eu-2:8081" is not an http or https URL with a host`,
		`clusters.yaml:6: clusters[2].name: "../x" is not a valid name: use 1 to 253 letters, digits, '.', '_' and '-', starting with a letter or digit`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if d := cmp.Diff(wantErr, strings.Split(err.Error(), "\n")); d != "" {
		t.Errorf("error (-want +got):\n%s", d)
	}
	_, err = DecodeClusters("clusters.yaml", []byte("clusters:\n  - name: a\n    url: http://a\n    uri: http://b\n"))
	if err == nil || err.Error() != `clusters.yaml:4: clusters[0].uri: unknown field (did you mean "url"?)` {
		t.Errorf("unknown field: %v", err)
	}
}

// TestFieldsOfFollowsEncodingJSON checks the field names of a struct
// with embedded structs against what encoding/json reads.
func TestFieldsOfFollowsEncodingJSON(t *testing.T) {
	type Inner struct {
		A int `json:"a"`
		B int
		C int
	}
	type other struct {
		C int
		D int `json:"d"`
	}
	type outer struct {
		Inner
		other
		B      string `json:"b"`
		E      int    `json:"-"`
		Tagged Inner  `json:"tagged"`
		hidden int
	}
	_ = outer{hidden: 1} // an unexported field is no JSON field
	var names []string
	for n := range fieldsOf(reflectTypeOf[outer]()) {
		names = append(names, n)
	}
	want := []string{"B", "a", "b", "d", "tagged"} // "C" is ambiguous: encoding/json drops it
	if d := cmp.Diff(want, sorted(names)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var o outer
	in := `{"a": 1, "B": 2, "b": "x", "d": 4, "tagged": {"a": 5}}`
	if err := decodeInto(in, &o); err != nil {
		t.Fatal(err)
	}
	if o.A != 1 || o.Inner.B != 2 || o.B != "x" || o.D != 4 || o.Tagged.A != 5 {
		t.Errorf("decoded %+v", o)
	}
	if err := decodeInto(`{"C": 1}`, &o); err == nil || !strings.Contains(err.Error(), "C: unknown field") {
		t.Errorf("an ambiguous field: %v; want unknown", err)
	}
}

func decodeInto(in string, v any) error {
	_, errs := decodeFile("f.json", []byte(in), v)
	if len(errs) > 0 {
		return join(errs)
	}
	return nil
}

func TestClosest(t *testing.T) {
	names := []string{"parallelism", "jarFile", "jarID", "args"}
	for key, want := range map[string]string{"paralelism": "parallelism", "JARFILE": "jarFile", "jarid": "jarID",
		"arg": "args", "entry": "", "x": "", "jarFil": "jarFile"} {
		if got := closest(key, names); got != want {
			t.Errorf("closest(%q) = %q; want %q", key, got, want)
		}
	}
}

// FuzzDecodeSpec decodes anything without a panic; what it accepts
// decodes the same with encoding/json from the JSON it re-encodes to,
// and validates.
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{
		"job: {jarFile: x, parallelism: 2}\n",
		`{"job": {"jarFile": "x", "args": ["a"]}, "update": {"mode": "Savepoint", "maxStateAge": "1h"}}`,
		"job:\n  <<: &d {jarFile: x}\n  args: [*d]\n",
		"a: &a [*a]\n",
		"job: {jarFile: x}\n---\n",
		"- [a, {b: c}]\n",
		"restore: {time: 2026-01-01}\n",
		"job: !!binary aGk=\n",
		"? !!null\n: x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSpec("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Errorf("error not naming the file: %v", err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Errorf("accepted a spec that does not validate: %v", err)
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeSpec("f.json", b)
		if err != nil {
			t.Fatalf("its own JSON: %v\n%s", err, b)
		}
		// An empty list or map and none are the same spec: JSON omits
		// both.
		if d := cmp.Diff(spec, again, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("through JSON (-first +again):\n%s", d)
		}
	})
}

func FuzzDecodeClusters(f *testing.F) {
	f.Add([]byte("clusters:\n  - {name: a, url: 'http://a'}\n"))
	f.Add([]byte("clusters: [{name: a}, {name: a, url: x}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := DecodeClusters("c.yaml", data)
		if err != nil {
			return
		}
		for _, c := range list.Clusters {
			if checkName(c.Name) != nil || !strings.HasPrefix(c.URL, "http") {
				t.Errorf("accepted %+v", c)
			}
		}
	})
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func sorted(s []string) []string { slices.Sort(s); return s }

func TestDecodeMapKeysAndOtherKinds(t *testing.T) {
	var v struct {
		ByNumber map[int]string `json:"byNumber"`
		Bytes    map[uint8]int  `json:"bytes"`
		Ratio    float64        `json:"ratio"`
		Small    uint8          `json:"small"`
		Any      any            `json:"any"`
		Ptr      *int           `json:"ptr"`
	}
	if err := decodeInto("byNumber: {1: a, 2: b}\nratio: 0.5\nsmall: 255\nany: {a: [1, x, true, null, 1.5]}\nptr: 3\n", &v); err != nil {
		t.Fatal(err)
	}
	if v.ByNumber[2] != "b" || v.Ratio != 0.5 || v.Small != 255 || v.Ptr == nil || *v.Ptr != 3 {
		t.Errorf("decoded %+v", v)
	}
	if d := cmp.Diff(map[string]any{"a": []any{1.0, "x", true, nil, 1.5}}, v.Any); d != "" {
		t.Errorf("any (-want +got):\n%s", d)
	}
	err := decodeInto("byNumber: {x: a}\nratio: .inf\nsmall: 256\nptr: [1]\nbytes: {255: 1, 256: 2}\n", &v)
	want := []string{
		`f.json:1: byNumber.x: want a whole number as the key, got "x"`,
		`f.json:2: ratio: want a finite number, got .inf`,
		`f.json:3: small: 256 is out of range (want a whole number, not negative)`,
		`f.json:4: ptr: want a whole number, got a list`,
		`f.json:5: bytes["256"]: want a whole number as the key, got 256`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if d := cmp.Diff(want, strings.Split(err.Error(), "\n")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDecodeLastWordIsEncodingJSON checks that what the walk lets pass
// and encoding/json refuses (a ",string" option, which the walk does not
// read) is still an error, naming the file.
func TestDecodeLastWordIsEncodingJSON(t *testing.T) {
	var v struct {
		N int `json:"n,string"`
	}
	err := decodeInto("n: 5\n", &v)
	if err == nil || !strings.HasPrefix(err.Error(), "f.json: json: invalid use of ,string") {
		t.Errorf("%v; want encoding/json's error, naming the file", err)
	}
}

// TestDecodeDeployment reads a deployment's name, cluster, application
// and job to adopt beside its spec's fields, as strictly as a spec.
func TestDecodeDeployment(t *testing.T) {
	d, err := DecodeDeployment("jobs/orders.yaml", []byte(`name: shop/orders
cluster: eu-1
application: shop
adoptName: legacy-orders
job:
  jarFile: orders-2.1.jar
  parallelism: 4
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Deployment{Name: "shop/orders", Cluster: "eu-1", Application: "shop", AdoptName: "legacy-orders",
		Spec: lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: "orders-2.1.jar", Parallelism: 4},
			Restart: policy.RestartPolicy{Mode: DefaultRestartMode}}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}
	spec, err := DecodeSpec("jobs/orders.yaml", []byte("job:\n  jarFile: orders-2.1.jar\n  parallelism: 4\n"))
	if err != nil || !sameSpec(spec, d.Spec) {
		t.Errorf("the spec of a deployment file %+v, DecodeSpec's of the same fields %+v (%v)", d.Spec, spec, err)
	}
	// Left out, the name and cluster are the caller's to fill in.
	if d, err := DecodeDeployment("orders.json", []byte(`{"job": {"jarFile": "orders.jar"}}`)); err != nil || d.Name != "" || d.Cluster != "" {
		t.Errorf("a file without name or cluster: %+v, %v", d, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"name: orders\nclustr: eu-1\njob: {jarFile: a.jar}\n", `orders.yaml:2: clustr: unknown field (did you mean "cluster"?)`},
		{"name: ../orders\njob: {jarFile: a.jar}\n", `orders.yaml:1: name: "../orders" is not a valid name`},
		{"name: orders\napplication: -shop\njob: {jarFile: a.jar}\n", `orders.yaml:2: application: "-shop" is not a valid name`},
		{"name: orders\njob: {jarFile: a.jar, parallelism: four}\n", `orders.yaml:2: job.parallelism: want a whole number, got "four"`},
		{"name: orders\n", `orders.yaml`},
	} {
		_, err := DecodeDeployment("orders.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// TestDecodeDeploymentReadsSpecAsDecodeSpec: the fields of a spec read
// from a deployment file are those DecodeSpec reads from a spec file of
// the same job: defaulted alike (restart.mode), validated alike, and a
// bad field is the same error at the same line.
func TestDecodeDeploymentReadsSpecAsDecodeSpec(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		restart policy.RestartMode // the mode read; "" for an invalid spec
	}{
		{"job: {jarFile: /j.jar}\n", DefaultRestartMode},
		{"job: {jarFile: /j.jar}\nrestart: {maxRestarts: 5, backoff: 10s}\n", DefaultRestartMode},
		{"job: {jarFile: /j.jar}\nrestart: {mode: Never}\n", policy.RestartNever},
		{"job: {jarFile: /j.jar}\nrestart: {mode: Sometimes}\n", ""},
		{"job: {jarFile: /j.jar}\nrestart:\n  maxRestarts: -1\n  window: -5s\n", ""},
		{"job: {jarFile: /j.jar, parallelism: -2}\nupdate: {mode: Sideways}\n", ""},
		{"job: {parallelism: 2}\n", ""},
		{"job: {jarFile: /j.jar}\nformatVersion: 99\n", ""},
	} {
		spec, specErr := DecodeSpec("orders.yaml", []byte(tc.spec))
		// The deployment's own fields follow the spec's, so that both
		// files write each spec field at the same line.
		d, depErr := DecodeDeployment("orders.yaml", []byte(tc.spec+"name: orders\ncluster: eu-1\n"))
		if tc.restart == "" {
			if specErr == nil || depErr == nil {
				t.Errorf("%q: DecodeSpec error %v, DecodeDeployment error %v; want both to refuse it", tc.spec, specErr, depErr)
				continue
			}
			if specErr.Error() != depErr.Error() {
				t.Errorf("%q: DecodeSpec says\n%v\nDecodeDeployment says\n%v", tc.spec, specErr, depErr)
			}
			for _, target := range []error{lifecycle.ErrInvalidSpec, lifecycle.ErrUnknownFormat} {
				if errors.Is(specErr, target) != errors.Is(depErr, target) {
					t.Errorf("%q: matching %v: DecodeSpec's error %v, DecodeDeployment's %v", tc.spec, target, errors.Is(specErr, target), errors.Is(depErr, target))
				}
			}
			continue
		}
		if specErr != nil || depErr != nil {
			t.Errorf("%q: DecodeSpec error %v, DecodeDeployment error %v", tc.spec, specErr, depErr)
			continue
		}
		if spec.Restart.Mode != tc.restart {
			t.Errorf("%q: restart mode %q, want %q", tc.spec, spec.Restart.Mode, tc.restart)
		}
		if diff := cmp.Diff(spec, d.Spec); diff != "" {
			t.Errorf("%q: the spec of DecodeSpec (-) and of DecodeDeployment (+):\n%s", tc.spec, diff)
		}
		if d.Name != "orders" || d.Cluster != "eu-1" {
			t.Errorf("%q: deployment %q on %q, want orders on eu-1", tc.spec, d.Name, d.Cluster)
		}
	}
}
