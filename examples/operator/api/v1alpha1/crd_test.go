package v1alpha1

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDUpToDate: the generated CRD describes exactly the JSON fields of
// the Go types, flinkkit's embedded ones included, so a field added to
// lifecycle.JobSpec, lifecycle.JobStatus or a policy is caught here until make generate runs.
func TestCRDUpToDate(t *testing.T) {
	b, err := os.ReadFile("../../config/crd/flinkkit.dev_flinkjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version {
		t.Fatalf("CRD versions %+v", crd.Spec.Versions)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)
	compare(t, "spec", reflect.TypeOf(FlinkJobSpec{}), props["spec"].(map[string]any))
	compare(t, "status", reflect.TypeOf(FlinkJobStatus{}), props["status"].(map[string]any))
}

var marshaler = reflect.TypeFor[json.Marshaler]()

var opaque = []reflect.Type{reflect.TypeOf(time.Time{}), reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.Condition{})}

// compare checks that the object schema s has a property for every JSON
// field of the struct type typ, and no other, recursively.
func compare(t *testing.T, path string, typ reflect.Type, s map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case slices.Contains(opaque, typ):
		return
	case typ.Kind() == reflect.Slice:
		items, _ := s["items"].(map[string]any)
		if items == nil {
			t.Errorf("%s: no items in the CRD", path)
			return
		}
		compare(t, path+"[]", typ.Elem(), items)
		return
	case typ.Kind() != reflect.Struct:
		return
	}
	if reflect.PointerTo(typ).Implements(marshaler) && s["x-kubernetes-preserve-unknown-fields"] != true {
		// Its JSON is its own (savepoint.History's compact form): fields
		// the Go type does not have must be kept, not pruned.
		t.Errorf("%s: %s writes its own JSON, and the CRD does not keep unknown fields (x-kubernetes-preserve-unknown-fields)", path, typ)
	}
	props, _ := s["properties"].(map[string]any)
	fields := map[string]bool{}
	for name, ft := range jsonFields(typ) {
		fields[name] = true
		sub, _ := props[name].(map[string]any)
		if sub == nil {
			t.Errorf("%s.%s: not in the CRD (run make generate)", path, name)
			continue
		}
		compare(t, path+"."+name, ft, sub)
	}
	for name := range props {
		if !fields[name] {
			t.Errorf("%s.%s: in the CRD, not in the Go type (run make generate)", path, name)
		}
	}
}

// jsonFields are the JSON fields of the struct type typ and their types,
// those of embedded structs without a JSON name (",inline") included.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		if f.Anonymous && ft.Kind() == reflect.Pointer {
			ft = ft.Elem() // encoding/json inlines an embedded *struct too
		}
		switch {
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			maps.Copy(out, jsonFields(ft))
		case f.IsExported() && name != "-" && name != "":
			out[name] = f.Type
		}
	}
	return out
}
