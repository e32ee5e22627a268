package flinktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Request body classes of Flink's REST API.
const (
	bodyJarRun       = "org.apache.flink.runtime.webmonitor.handlers.JarRunRequestBody"
	bodyJarRunApp    = "org.apache.flink.runtime.webmonitor.handlers.JarRunApplicationRequestBody"
	bodyJarPlan      = "org.apache.flink.runtime.webmonitor.handlers.JarPlanRequestBody"
	bodySavepoint    = "org.apache.flink.runtime.rest.messages.job.savepoints.SavepointTriggerRequestBody"
	bodyStop         = "org.apache.flink.runtime.rest.messages.job.savepoints.stop.StopWithSavepointRequestBody"
	bodyCheckpoint   = "org.apache.flink.runtime.rest.messages.checkpoints.CheckpointTriggerRequestBody"
	bodyDisposal     = "org.apache.flink.runtime.rest.messages.job.savepoints.SavepointDisposalRequest"
	bodyRequirements = "org.apache.flink.runtime.rest.messages.job.JobResourceRequirementsBody"
)

// body is a parsed JSON request body: its fields by name, as Jackson reads
// them (names are case-sensitive).
type body struct {
	class  string
	fields map[string]json.RawMessage
}

func simpleName(class string) string { return class[strings.LastIndexByte(class, '.')+1:] }

// parseBody parses a request body of class. An empty body counts as "{}".
// Fields not in known are rejected by the strict mapper of Flink 1.15 to
// 1.19 and ignored by later versions. known == nil accepts any field.
func (q *request) parseBody(class string, known []string) (*body, *restError) {
	b := &body{class: class, fields: map[string]json.RawMessage{}}
	raw := bytes.TrimSpace(q.body)
	if len(raw) == 0 {
		return b, nil
	}
	if err := json.Unmarshal(raw, &b.fields); err != nil || b.fields == nil {
		return nil, badFormat(simpleName(class), jexc{class: classJSONParse, msg: "Unexpected character: was expecting a JSON object\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 2]"})
	}
	if known != nil && q.s.cfg.pers.strictMapper() {
		names := make([]string, 0, len(b.fields))
		for k := range b.fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !contains(known, k) {
				quoted := make([]string, len(known))
				for i, f := range known {
					quoted[i] = `"` + f + `"`
				}
				return nil, badFormat(simpleName(class), jexc{class: classJSONUnrecognized, msg: fmt.Sprintf(
					"Unrecognized field \"%s\" (class %s), not marked as ignorable (%d known properties: %s])\n at [Source: UNKNOWN; line: 1, column: 2] (through reference chain: %s[\"%s\"])",
					k, class, len(known), strings.Join(quoted, ", "), class, k)})
			}
		}
	}
	return b, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (b *body) present(name string) bool {
	v, ok := b.fields[name]
	return ok && string(v) != "null"
}

// mismatch is the 400 for a field of the wrong type.
func (b *body) mismatch(name, javaType string) *restError {
	return badFormat(simpleName(b.class), jexc{class: classJSONMapping, msg: fmt.Sprintf(
		"Cannot deserialize value of type `%s` from %s (through reference chain: %s[\"%s\"])",
		javaType, describeJSON(b.fields[name]), b.class, name)})
}

func describeJSON(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	switch {
	case strings.HasPrefix(s, "{"):
		return "Object value (token `JsonToken.START_OBJECT`)"
	case strings.HasPrefix(s, "["):
		return "Array value (token `JsonToken.START_ARRAY`)"
	case strings.HasPrefix(s, `"`):
		return "String value " + s
	case s == "true" || s == "false":
		return "Boolean value"
	}
	return "Number value " + s
}

func (b *body) str(name string) (string, *restError) {
	if !b.present(name) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(b.fields[name], &s); err != nil {
		return "", b.mismatch(name, "java.lang.String")
	}
	return s, nil
}

func (b *body) boolean(name string) (bool, *restError) {
	if !b.present(name) {
		return false, nil
	}
	var v bool
	if err := json.Unmarshal(b.fields[name], &v); err != nil {
		return false, b.mismatch(name, "java.lang.Boolean")
	}
	return v, nil
}

func (b *body) integer(name string) (int, *restError) {
	if !b.present(name) {
		return 0, nil
	}
	var v int
	if err := json.Unmarshal(b.fields[name], &v); err != nil {
		return 0, b.mismatch(name, "java.lang.Integer")
	}
	return v, nil
}

func (b *body) strings(name string) ([]string, *restError) {
	if !b.present(name) {
		return nil, nil
	}
	var v []string
	if err := json.Unmarshal(b.fields[name], &v); err != nil {
		return nil, b.mismatch(name, "java.util.List<java.lang.String>")
	}
	return v, nil
}

func (b *body) stringMap(name string) (map[string]string, *restError) {
	if !b.present(name) {
		return nil, nil
	}
	var v map[string]string
	if err := json.Unmarshal(b.fields[name], &v); err != nil {
		return nil, b.mismatch(name, "java.util.Map<java.lang.String,java.lang.String>")
	}
	return v, nil
}

// enum reads a Java enum field, which must hold one of values.
func (b *body) enum(name, javaType string, values ...string) (string, *restError) {
	s, e := b.str(name)
	if e != nil {
		return "", e
	}
	if s == "" || contains(values, s) {
		return s, nil
	}
	return "", badFormat(simpleName(b.class), jexc{class: classJSONMapping, msg: fmt.Sprintf(
		"Cannot deserialize value of type `%s` from String \"%s\": not one of the values accepted for Enum class: [%s] (through reference chain: %s[\"%s\"])",
		javaType, s, strings.Join(values, ", "), b.class, name)})
}

// triggerID reads a "triggerId" field: 32 hex characters.
func (b *body) triggerID(name string) (flinkapi.TriggerID, *restError) {
	s, e := b.str(name)
	if e != nil || s == "" {
		return "", e
	}
	id, err := flinkapi.ParseTriggerID(s)
	if err != nil {
		return "", b.mismatch(name, "org.apache.flink.runtime.rest.messages.TriggerId")
	}
	return id, nil
}
