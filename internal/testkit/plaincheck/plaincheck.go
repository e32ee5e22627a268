package plaincheck

import (
	"fmt"
	"reflect"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// Problems returns one message per field of typ (named name) that a struct
// copy would share or that is unexported: pointers, slices, maps,
// interfaces, funcs and channels, found at any depth. Paths listed in
// allowed (such as "Observations.Job") are skipped; their type's
// DeepCopyInto copies them explicitly.
func Problems(name string, typ reflect.Type, allowed ...string) []string {
	skip := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		skip[a] = true
	}
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		if t == timeType || skip[path] {
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					out = append(out, fmt.Sprintf("%s.%s is unexported: stored types hold exported data only", path, f.Name))
					continue
				}
				walk(path+"."+f.Name, f.Type)
			}
		case reflect.Array:
			walk(path+"[i]", t.Elem())
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			out = append(out, fmt.Sprintf("%s is a %s: a plain struct copy would share it, so DeepCopyInto must copy it", path, t.Kind()))
		}
	}
	walk(name, typ)
	return out
}
