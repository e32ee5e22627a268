package lifecycle

import (
	"reflect"
	"testing"
	"time"
)

// TestSameSeesEveryField: same reports two specs, and two statuses,
// filled alike (every field set, every slice and map with an entry)
// the same, and reports them different once any one settable leaf of
// the second differs: a resync compares every field of what it is
// handed.
func TestSameSeesEveryField(t *testing.T) {
	t.Run("JobSpec", func(t *testing.T) { testSameSeesEveryField[JobSpec](t) })
	t.Run("JobStatus", func(t *testing.T) { testSameSeesEveryField[JobStatus](t) })
}

func testSameSeesEveryField[T any](t *testing.T) {
	var a, b T
	fillValue(reflect.ValueOf(&a).Elem(), 0)
	fillValue(reflect.ValueOf(&b).Elem(), 0)
	if !same(&a, &b) {
		t.Fatal("two values filled alike are not the same")
	}
	leaves := 0
	for k := 0; ; k++ {
		var c T
		fillValue(reflect.ValueOf(&c).Elem(), 0)
		n := k
		path, ok := mutateLeaf(reflect.ValueOf(&c).Elem(), &n, "")
		if !ok {
			break
		}
		leaves++
		if same(&a, &c) {
			t.Errorf("%s changed: reported the same", path)
		}
	}
	t.Logf("%d leaves changed", leaves)
	if leaves < 20 {
		t.Fatalf("only %d leaves changed", leaves)
	}
}

var timeType = reflect.TypeFor[time.Time]()

// fillValue sets every settable leaf of v to a value other than its zero,
// the same for every call: pointers point to a filled value, slices and
// maps hold one filled entry.
func fillValue(v reflect.Value, depth int) {
	if !v.CanSet() || depth > 12 {
		return
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Unix(1700000000, 0)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i), depth+1)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(k, depth+1)
		fillValue(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}

// mutateLeaf changes the n-th settable leaf of v (counting from 0, n
// counted down as leaves pass) and returns its path; false when v has
// no more leaves.
func mutateLeaf(v reflect.Value, n *int, path string) (string, bool) {
	if !v.CanSet() {
		return "", false
	}
	leaf := func(set func()) (string, bool) {
		if *n == 0 {
			set()
			return path, true
		}
		*n--
		return "", false
	}
	if v.Type() == timeType {
		return leaf(func() { v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Nanosecond))) })
	}
	switch v.Kind() {
	case reflect.String:
		return leaf(func() { v.SetString(v.String() + "x") })
	case reflect.Bool:
		return leaf(func() { v.SetBool(!v.Bool()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return leaf(func() { v.SetInt(v.Int() + 1) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return leaf(func() { v.SetUint(v.Uint() + 1) })
	case reflect.Float32, reflect.Float64:
		return leaf(func() { v.SetFloat(v.Float() + 1) })
	case reflect.Struct:
		for i := range v.NumField() {
			if p, ok := mutateLeaf(v.Field(i), n, path+"."+v.Type().Field(i).Name); ok {
				return p, true
			}
		}
	case reflect.Pointer:
		if p, ok := leaf(func() { v.Set(reflect.Zero(v.Type())) }); ok {
			return p + " (nil)", true
		}
		if !v.IsNil() {
			return mutateLeaf(v.Elem(), n, path)
		}
	case reflect.Slice:
		if p, ok := leaf(func() { v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem())) }); ok {
			return p + " (longer)", true
		}
		for i := range v.Len() {
			if p, ok := mutateLeaf(v.Index(i), n, path+"[i]"); ok {
				return p, true
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			if p, ok := mutateLeaf(v.Index(i), n, path+"[i]"); ok {
				return p, true
			}
		}
	case reflect.Map:
		return leaf(func() {
			k := reflect.New(v.Type().Key()).Elem()
			v.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
		})
	}
	return "", false
}
