package flinkapi

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The OpenAPI descriptions Flink generates for its REST API, per version.
var openAPIFiles = map[string]string{
	"1.15": "rest_v1_dispatcher-1.15.yml",
	"1.20": "rest_v1_dispatcher-1.20.yml",
	"2.0":  "rest_v1_dispatcher-2.0.yml",
	"2.2":  "rest_v1_dispatcher-2.2.yml",
	"2.3":  "rest_v1_dispatcher-2.3.yml", // generated from flink-runtime 2.3.0 (see the README)
}

// openAPIDir holds copies of Flink's OpenAPI files (see its README.md for
// where each comes from).
var openAPIDir = filepath.Join("testdata", "openapi")

type openAPI struct {
	doc     map[string]any
	schemas map[string]any
}

func loadOpenAPI(t *testing.T, file string) *openAPI {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	return &openAPI{doc: doc, schemas: schemas}
}

func (o *openAPI) deref(n any) map[string]any {
	m, _ := n.(map[string]any)
	for i := 0; m != nil && i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		m, _ = o.schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	return m
}

// refName returns the schema name n refers to, or "".
func (o *openAPI) refName(n any) string {
	m, _ := n.(map[string]any)
	ref, _ := m["$ref"].(string)
	return strings.TrimPrefix(ref, "#/components/schemas/")
}

// props merges the properties of a schema, of its allOf parts and of the
// alternatives of oneOf/anyOf. Flink's checkpoint statistics are
// polymorphic (a "className" discriminator with completed, failed and
// in-progress subtypes) and the client decodes them into one type, so for a
// member of such a family the properties of every subtype count.
func (o *openAPI) props(n any) map[string]any {
	out := map[string]any{}
	o.mergeProps(n, out)
	base := o.refName(n)
	if m := o.deref(n); m != nil {
		if parts, ok := m["allOf"].([]any); ok {
			for _, part := range parts {
				if r := o.refName(part); r != "" {
					base = r
				}
			}
		}
	}
	if bm, ok := o.schemas[base].(map[string]any); ok && base != "" {
		if bp, _ := bm["properties"].(map[string]any); bp["className"] != nil {
			for _, sub := range o.schemas {
				sm, _ := sub.(map[string]any)
				parts, _ := sm["allOf"].([]any)
				for _, part := range parts {
					if o.refName(part) == base {
						o.mergeProps(sub, out)
					}
				}
			}
		}
	}
	return out
}

func (o *openAPI) mergeProps(n any, out map[string]any) {
	m := o.deref(n)
	if m == nil {
		return
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for k, v := range p {
			out[k] = v
		}
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		parts, _ := m[key].([]any)
		for _, part := range parts {
			o.mergeProps(part, out)
		}
	}
}

// bodySchema returns the JSON schema of an endpoint's request body or
// successful response.
func (o *openAPI) bodySchema(method, path string, request bool) (any, bool) {
	paths, _ := o.doc["paths"].(map[string]any)
	ops, _ := paths[path].(map[string]any)
	op, _ := ops[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return nil, false
	}
	var content map[string]any
	if request {
		rb, _ := op["requestBody"].(map[string]any)
		content, _ = rb["content"].(map[string]any)
	} else {
		resps, _ := op["responses"].(map[string]any)
		for _, code := range []string{"200", "202", "201"} {
			if r, ok := resps[code].(map[string]any); ok {
				content, _ = r["content"].(map[string]any)
				break
			}
		}
	}
	js, _ := content["application/json"].(map[string]any)
	s, ok := js["schema"]
	return s, ok
}

// fieldRule says in which versions' schemas a JSON field of a client type
// exists. since/until are "" for "from the first file" / "to the last".
type fieldRule struct {
	since, until string
	feature      Feature // for request fields: the gate that withholds the field
	// fileLags marks a request field that the version has although its
	// generated file does not list it.
	fileLags bool
	why      string
}

// rules lists every field that is not in all the OpenAPI files, keyed
// "<endpoint> <json path>". A field missing from a version's schema without a
// rule fails the test, and so does a rule that no longer matches.
var schemaRules = map[string]fieldRule{
	// Requests: fields the client withholds from versions without them.
	"POST /jars/{jarid}/run claimMode":           {since: "1.20", feature: FeatureClaimMode},
	"POST /jars/{jarid}/run flinkConfiguration":  {since: "1.20", feature: FeatureJarRunConfiguration, why: "1.17+; the 1.15 file is the only older one"},
	"POST /jars/{jarid}/plan flinkConfiguration": {since: "1.20", feature: FeatureJarRunConfiguration, why: "1.17+ (JarRequestBody, shared with the jar run); the 1.15 file is the only older one"},
	"POST /jobs/{jobid}/savepoints formatType":   {since: "1.20", feature: FeatureSavepointFormatType, fileLags: true, why: "shipped in 1.15.0 (FLINK-25744); the 1.15 file lags"},
	"POST /jobs/{jobid}/stop formatType":         {since: "1.20", feature: FeatureSavepointFormatType, fileLags: true, why: "shipped in 1.15.0 (FLINK-25744); the 1.15 file lags"},
	"POST /jobs/{jobid}/checkpoints *":           {since: "1.20", feature: FeatureCheckpointTrigger, why: "endpoint added in 1.17"},
	// In no file: Flink writes JobConfigInfo with a custom serializer (jid,
	// name, execution-config) that its generated schemas do not describe
	// (they list jobId, jobName and executionConfigInfo). The recorded
	// answers of real 1.20.5 and 2.3.0 clusters pin it (job_config.json).
	"GET /jobs/{jobid}/config *": {until: "1.0", why: "a custom serializer the generated schemas do not describe"},

	// Responses: fields older or newer versions do not send; decoding tolerates their absence.
	"GET /config features.web-rescale":                                                         {since: "1.20"},
	"GET /config features.web-history":                                                         {since: "1.20"},
	"* operation.checkpointId":                                                                 {since: "1.20", why: "CheckpointInfo joined the async results with the checkpoint trigger (1.17)"},
	"* operation.failureCause":                                                                 {since: "1.20", why: "as above"},
	"GET /overview taskmanagers-blocked":                                                       {since: "1.20"},
	"GET /overview slots-free-and-blocked":                                                     {since: "1.20"},
	"GET /taskmanagers taskmanagers.blocked":                                                   {since: "1.20"},
	"GET /jobs/{jobid} job-type":                                                               {since: "1.20"},
	"GET /jobs/{jobid} vertices.*":                                                             {since: "1.20", why: "the 1.15 file describes vertices without a schema name"},
	"GET /jobs/overview jobs.*":                                                                {since: "1.20", why: "the 1.15 file names JobDetails' fields as the Java getters (jobId, jobName), not as Flink's custom serializer writes them (jid, name)"},
	"GET /jobs/overview jobs.jobType":                                                          {since: "2.3"},
	"GET /jobs/{jobid} application-id":                                                         {since: "2.3"},
	"POST /jars/{jarid}/run applicationId":                                                     {since: "2.3"},
	"GET /jobs/overview jobs.schedulerType":                                                    {since: "2.3"},
	"GET /applications/overview *":                                                             {since: "2.3", why: "endpoint added in 2.3"},
	"GET /applications/{applicationid} *":                                                      {since: "2.3", why: "endpoint added in 2.3"},
	"POST /jars/{jarid}/run-application restoreMode":                                           {until: "2.3", why: "the run-application body has claimMode only; the client sends restoreMode to clusters before 1.20, which have no applications"},
	"POST /jars/{jarid}/run-application *":                                                     {since: "2.3", feature: FeatureApplications, why: "endpoint added in 2.3"},
	"GET /jobs/{jobid}/rescales/history *":                                                     {since: "2.3", why: "endpoint added in 2.3"},
	"GET /jobs/{jobid}/rescales/details/{rescaleuuid} *":                                       {since: "2.3", why: "endpoint added in 2.3"},
	"GET /jobs/{jobid}/status *":                                                               {since: "1.20", why: "endpoint added in 1.16"},
	"GET /jobs/{jobid}/resource-requirements *":                                                {since: "1.20", why: "endpoint added in 1.18"},
	"PUT /jobs/{jobid}/resource-requirements *":                                                {since: "1.20", why: "endpoint added in 1.18"},
	"GET /jobs/{jobid}/checkpoints/{triggerid} *":                                              {since: "1.20", why: "endpoint added in 1.17"},
	"GET /jobs/{jobid}/checkpoints history.savepointFormat":                                    {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.completed.savepointFormat":                           {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.savepoint.savepointFormat":                           {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.failed.savepointFormat":                              {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints history.checkpointed_size":                                  {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.completed.checkpointed_size":                         {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.savepoint.checkpointed_size":                         {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints latest.failed.checkpointed_size":                            {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints/details/{checkpointid} savepointFormat":                     {since: "1.20"},
	"GET /jobs/{jobid}/checkpoints/details/{checkpointid} checkpointed_size":                   {since: "1.20"},
	"GET /jobs/{jobid}/exceptions root-exception":                                              {until: "2.0", why: "legacy field removed in 2.0"},
	"GET /jobs/{jobid}/exceptions timestamp":                                                   {until: "2.0", why: "legacy field removed in 2.0"},
	"GET /jobs/{jobid}/exceptions truncated":                                                   {until: "2.0", why: "legacy field removed in 2.0"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.location":                           {until: "2.0", why: "renamed endpoint in 1.19, removed in 2.0"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.concurrentExceptions.location":      {until: "2.0"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.endpoint":                           {since: "1.20"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.concurrentExceptions.endpoint":      {since: "1.20"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.taskManagerId":                      {since: "1.20"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.concurrentExceptions.taskManagerId": {since: "1.20"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.failureLabels":                      {since: "1.20"},
	"GET /jobs/{jobid}/exceptions exceptionHistory.entries.concurrentExceptions.failureLabels": {since: "1.20"},
}

// neverInSchema lists fields Flink sends through custom serializers that its
// generated schemas do not describe. The real-cluster suite pins them.
// Keys are suffixes of JSON paths.
var neverInSchema = map[string]string{
	"failure-cause.class":                       "SerializedThrowable is written by a custom serializer with class and stack-trace",
	"failure-cause.stack-trace":                 "as above",
	"failureCause.class":                        "as above",
	"failureCause.stack-trace":                  "as above",
	"concurrentExceptions.concurrentExceptions": "the client reuses one type for an entry and its concurrent exceptions; Flink nests one level only",
}

func neverInSchemaWhy(path string) (string, bool) {
	for suffix, why := range neverInSchema {
		if path == suffix || strings.HasSuffix(path, "."+suffix) {
			return why, true
		}
	}
	return "", false
}

type schemaEndpoint struct {
	method, path string
	request      bool
	wire         any
}

var schemaEndpoints = []schemaEndpoint{
	{"GET", "/config", false, DashboardConfig{}},
	{"GET", "/overview", false, ClusterOverview{}},
	{"GET", "/taskmanagers", false, taskManagersWire{}},
	{"GET", "/jobs", false, jobsListWire{}},
	{"GET", "/jobs/overview", false, jobsOverviewWire{}},
	{"GET", "/jobs/{jobid}", false, jobDetailsWire{}},
	{"GET", "/jobs/{jobid}/status", false, jobStatusWire{}},
	{"GET", "/jobs/{jobid}/exceptions", false, jobExceptionsWire{}},
	{"GET", "/jobs/{jobid}/resource-requirements", false, map[string]vertexRequirementsWire{}},
	{"PUT", "/jobs/{jobid}/resource-requirements", true, map[string]vertexRequirementsWire{}},
	{"GET", "/jobs/{jobid}/checkpoints", false, checkpointStatisticsWire{}},
	{"GET", "/jobs/{jobid}/checkpoints/config", false, checkpointConfigWire{}},
	{"GET", "/jobs/{jobid}/config", false, jobConfigWire{}},
	{"GET", "/jobs/{jobid}/checkpoints/details/{checkpointid}", false, checkpointStatsWire{}},
	{"GET", "/jobs/{jobid}/checkpoints/details/{checkpointid}", false, checkpointTasksWire{}},
	{"POST", "/jobs/{jobid}/checkpoints", true, checkpointRequestWire{}},
	{"POST", "/jobs/{jobid}/checkpoints", false, triggerResponseWire{}},
	{"GET", "/jobs/{jobid}/checkpoints/{triggerid}", false, asyncResultWire{}},
	{"POST", "/jobs/{jobid}/savepoints", true, savepointRequestWire{}},
	{"POST", "/jobs/{jobid}/savepoints", false, triggerResponseWire{}},
	{"POST", "/jobs/{jobid}/stop", true, stopRequestWire{}},
	{"POST", "/jobs/{jobid}/stop", false, triggerResponseWire{}},
	{"GET", "/jobs/{jobid}/savepoints/{triggerid}", false, asyncResultWire{}},
	{"POST", "/savepoint-disposal", true, disposalRequestWire{}},
	{"POST", "/savepoint-disposal", false, triggerResponseWire{}},
	{"GET", "/savepoint-disposal/{triggerid}", false, asyncResultWire{}},
	{"POST", "/jars/upload", false, jarUploadWire{}},
	{"GET", "/jars", false, jarsWire{}},
	{"POST", "/jars/{jarid}/run", true, runJarWire{}},
	{"POST", "/jars/{jarid}/run", false, runJarResponseWire{}},
	{"POST", "/jars/{jarid}/plan", true, jarPlanWire{}},
	{"POST", "/jars/{jarid}/plan", false, planWire{}},
	{"GET", "/jobs/{jobid}/plan", false, planWire{}},
	{"GET", "/applications/overview", false, applicationsOverviewWire{}},
	{"GET", "/applications/{applicationid}", false, applicationDetailsWire{}},
	{"POST", "/jars/{jarid}/run-application", true, runApplicationWire{}},
	{"POST", "/jars/{jarid}/run-application", false, runApplicationResponseWire{}},
	{"GET", "/jobs/{jobid}/rescales/history", false, []rescaleWire{}},
	{"GET", "/jobs/{jobid}/rescales/details/{rescaleuuid}", false, rescaleWire{}},
}

// jsonFields walks a Go type and calls visit for every JSON field path
// ("latest.completed.external_path") with the schema node of its parent.
func jsonFields(o *openAPI, typ reflect.Type, schema any, prefix string, visit func(path string, present bool, node any)) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
		if m := o.deref(schema); m != nil && m["items"] != nil {
			schema = m["items"]
		}
	}
	if typ.Kind() == reflect.Map {
		if m := o.deref(schema); m != nil && m["additionalProperties"] != nil {
			schema = m["additionalProperties"]
		}
		if typ.Elem().Kind() == reflect.Struct {
			jsonFields(o, typ.Elem(), schema, prefix, visit)
		}
		return
	}
	if typ.Kind() != reflect.Struct {
		return
	}
	props := o.props(schema)
	if m := o.deref(schema); len(props) == 0 && m != nil && m["additionalProperties"] != nil {
		// A struct decoded from what the schema describes as a map (task
		// counts, state timestamps): its keys are Flink's state names,
		// which no schema lists; the recorded real answers pin them.
		return
	}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the outer object's.
			jsonFields(o, f.Type, schema, prefix, visit)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		node, present := props[name]
		path := prefix + name
		visit(path, present, node)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		// Recurse into nested objects the schema describes; stop at absent
		// fields and at self-referencing types (concurrentExceptions).
		if present && ft.Kind() == reflect.Struct && strings.Count(path, ".") < 4 {
			jsonFields(o, f.Type, node, path+".", visit)
		}
	}
}

func versionOf(s string) Version { v, _ := ParseVersion(s); return v }

func (r fieldRule) covers(version string) bool {
	v := versionOf(version)
	if r.since != "" && v.compare(versionOf(r.since)) < 0 {
		return false
	}
	return r.until == "" || v.compare(versionOf(r.until)) < 0
}

// TestTypesMatchOpenAPI checks, for each of Flink's OpenAPI files, that the
// JSON field names of every request and response type of this client exist
// in that version's schema of the endpoint, and that the fields a version
// lacks are exactly the ones the rules name (and, for requests, the ones the
// client withholds from that version).
func TestTypesMatchOpenAPI(t *testing.T) {
	used := map[string]bool{}
	versions := make([]string, 0, len(openAPIFiles))
	for v := range openAPIFiles {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	for _, version := range versions {
		o := loadOpenAPI(t, filepath.Join(openAPIDir, openAPIFiles[version]))
		for _, ep := range schemaEndpoints {
			endpoint := ep.method + " " + ep.path
			dirn := "response"
			if ep.request {
				dirn = "request"
			}
			schema, ok := o.bodySchema(ep.method, ep.path, ep.request)
			whole, hasWhole := schemaRules[endpoint+" *"]
			if hasWhole {
				used[endpoint+" *"] = true
			}
			if !ok {
				if hasWhole && !whole.covers(version) {
					if ep.request && versionOf(version).Supports(whole.feature) {
						t.Errorf("%s: %s %s has no schema, but the client sends it to this version", version, endpoint, dirn)
					}
					continue
				}
				t.Errorf("%s: no %s schema for %s", version, dirn, endpoint)
				continue
			}
			jsonFields(o, reflect.TypeOf(ep.wire), schema, "", func(path string, present bool, _ any) {
				if why, ok := neverInSchemaWhy(path); ok {
					if present {
						t.Errorf("%s: %s %s is in the schema now; drop it from neverInSchema (%s)", version, endpoint, path, why)
					}
					return
				}
				key := endpoint + " " + path
				rule, hasRule := schemaRules[key]
				if !hasRule {
					if r, ok := schemaRules["* "+path]; ok {
						rule, hasRule, key = r, true, "* "+path
					}
				}
				if !hasRule {
					// A rule on a parent path covers its children ("jobs.*").
					for p := path; strings.Contains(p, "."); {
						p = p[:strings.LastIndex(p, ".")]
						if r, ok := schemaRules[endpoint+" "+p+".*"]; ok {
							rule, hasRule, key = r, true, endpoint+" "+p+".*"
							break
						}
					}
				}
				if hasRule {
					used[key] = true
				}
				want := !hasRule || rule.covers(version)
				if hasWhole && !whole.covers(version) {
					want = false
				}
				switch {
				case present && !want && !strings.HasSuffix(key, ".*"):
					t.Errorf("%s: %s %s field %q is in this version's schema, but the rule says it is not (%s)", version, endpoint, dirn, path, rule.why)
				case !present && want:
					t.Errorf("%s: %s %s field %q is not in this version's schema", version, endpoint, dirn, path)
				case !present && ep.request && hasRule && !rule.fileLags && versionOf(version).Supports(rule.feature):
					t.Errorf("%s: %s request field %q is missing from this version, but the client would send it (feature %s)", version, endpoint, path, rule.feature)
				}
			})
		}
	}
	for k := range schemaRules {
		if !used[k] {
			t.Errorf("rule %q matched no field: remove or fix it", k)
		}
	}
}

// The client's request fields are gated by the same versions the rules give.
func TestSchemaRulesAgreeWithFeatureGates(t *testing.T) {
	for key, r := range schemaRules {
		if r.feature == 0 {
			continue
		}
		since := features[r.feature].since
		if r.since != "" && versionOf(r.since).compare(since) < 0 {
			t.Errorf("%s: schema has it from %s, the client sends it from %s", key, r.since, since)
		}
		_ = fmt.Sprint(key)
	}
}
