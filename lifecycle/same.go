package lifecycle

import (
	"reflect"
	"sync"
	"unsafe"
)

// same reports whether *a and *b hold the same content: every field,
// element and map entry the same, pointers compared by what they point
// to (as reflect.DeepEqual, but for funcs and channels, which it never
// reports the same, for floats, compared by their bits, and for
// interfaces and maps of other types than the spec's and the status's,
// the same only when they hold the same pointer or are empty). It reports
// nothing the same that is not.
// It compares by a plan of each type made once (samePlanOf), reading the
// memory of both values without allocating: the resync of a job at rest
// compares its spec and status with those of its last full call.
func same[T any](a, b *T) bool {
	return sameAt(samePlanOf(reflect.TypeFor[T]()), unsafe.Pointer(a), unsafe.Pointer(b))
}

// samePlan is how values of one type are compared: the byte ranges
// holding no pointer (raw), compared as bytes, and the parts that do
// (parts), each by its kind.
type samePlan struct {
	size  uintptr
	raw   []sameSpan
	parts []samePart
	never bool // a func or channel: never reported the same
}

// sameSpan is a byte range of a value: offset and length.
type sameSpan struct{ off, n uintptr }

// samePart is a part of a value holding pointers: a string, pointer,
// slice, map or interface at off.
type samePart struct {
	off  uintptr
	kind reflect.Kind
	typ  reflect.Type // the part's type (maps, interfaces)
	elem *samePlan    // what a pointer or a slice's elements hold
}

// samePlans caches the plans by type; samePlansMu is held while plans
// are made.
var (
	samePlans   sync.Map // reflect.Type -> *samePlan
	samePlansMu sync.Mutex
)

// samePlanOf is the plan of type t, made once.
func samePlanOf(t reflect.Type) *samePlan {
	if p, ok := samePlans.Load(t); ok {
		return p.(*samePlan)
	}
	samePlansMu.Lock()
	defer samePlansMu.Unlock()
	making := map[reflect.Type]*samePlan{}
	p := makePlan(t, making)
	for t, p := range making {
		samePlans.Store(t, p)
	}
	return p
}

// makePlan makes the plan of type t, and of the types its pointers and
// slices hold, into making (the plans being made, stored once all are).
func makePlan(t reflect.Type, making map[reflect.Type]*samePlan) *samePlan {
	if p, ok := samePlans.Load(t); ok {
		return p.(*samePlan)
	}
	if p, ok := making[t]; ok {
		return p
	}
	p := &samePlan{size: t.Size()}
	making[t] = p
	p.add(t, 0, making)
	return p
}

// add adds the parts of a value of type t at off to p.
func (p *samePlan) add(t reflect.Type, off uintptr, making map[reflect.Type]*samePlan) {
	if !hasPointers(t, nil) {
		if t.Size() > 0 {
			if n := len(p.raw); n > 0 && p.raw[n-1].off+p.raw[n-1].n == off {
				p.raw[n-1].n += t.Size()
			} else {
				p.raw = append(p.raw, sameSpan{off: off, n: t.Size()})
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			p.add(f.Type, off+f.Offset, making)
		}
	case reflect.Array:
		for i := range t.Len() {
			p.add(t.Elem(), off+uintptr(i)*t.Elem().Size(), making)
		}
	case reflect.Pointer, reflect.Slice:
		p.parts = append(p.parts, samePart{off: off, kind: t.Kind(), typ: t, elem: makePlan(t.Elem(), making)})
	case reflect.String, reflect.Map, reflect.Interface:
		p.parts = append(p.parts, samePart{off: off, kind: t.Kind(), typ: t})
	default:
		p.never = true
	}
}

// hasPointers reports whether a value of type t holds a pointer (seen:
// the struct types being looked at).
func hasPointers(t reflect.Type, seen []reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem(), seen)
	case reflect.Struct:
		for _, s := range seen {
			if s == t {
				return true
			}
		}
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type, append(seen, t)) {
				return true
			}
		}
		return false
	}
	return true
}

// sameAt compares the values at a and b by plan p.
func sameAt(p *samePlan, a, b unsafe.Pointer) bool {
	if p.never {
		return false
	}
	for _, s := range p.raw {
		if unsafe.String((*byte)(unsafe.Add(a, s.off)), s.n) != unsafe.String((*byte)(unsafe.Add(b, s.off)), s.n) {
			return false
		}
	}
	for i := range p.parts {
		q := &p.parts[i]
		x, y := unsafe.Add(a, q.off), unsafe.Add(b, q.off)
		switch q.kind {
		case reflect.String:
			if *(*string)(x) != *(*string)(y) {
				return false
			}
		case reflect.Pointer:
			px, py := *(*unsafe.Pointer)(x), *(*unsafe.Pointer)(y)
			if px != py && (px == nil || py == nil || !sameAt(q.elem, px, py)) {
				return false
			}
		case reflect.Slice:
			if !sameSlice(q.elem, (*sliceOf)(x), (*sliceOf)(y)) {
				return false
			}
		case reflect.Map:
			if !sameMap(q.typ, x, y) {
				return false
			}
		case reflect.Interface:
			// The same dynamic type and value pointer: the same value;
			// else not compared (reported different).
			if *(*[2]unsafe.Pointer)(x) != *(*[2]unsafe.Pointer)(y) {
				return false
			}
		}
	}
	return true
}

// sliceOf is a slice's header.
type sliceOf struct {
	data     unsafe.Pointer
	len, cap int
}

// sameSlice compares two slices of elements of plan p: nil or not, the
// same length and the same elements.
func sameSlice(p *samePlan, x, y *sliceOf) bool {
	if (x.data == nil) != (y.data == nil) || x.len != y.len {
		return false
	}
	if x.data == y.data || x.len == 0 {
		return true
	}
	for i := range x.len {
		off := uintptr(i) * p.size
		if !sameAt(p, unsafe.Add(x.data, off), unsafe.Add(y.data, off)) {
			return false
		}
	}
	return true
}

// sameMap compares two maps of type t at x and y: those of the spec and
// the status (strings to strings or to int64, audit kinds to counts)
// entry by entry; others only when both are nil or both empty (else
// they are reported different).
func sameMap(t reflect.Type, x, y unsafe.Pointer) bool {
	switch t {
	case reflect.TypeFor[map[string]string]():
		return sameEntries(*(*map[string]string)(x), *(*map[string]string)(y))
	case reflect.TypeFor[map[string]int64]():
		return sameEntries(*(*map[string]int64)(x), *(*map[string]int64)(y))
	case reflect.TypeFor[map[AuditKind]int]():
		return sameEntries(*(*map[AuditKind]int)(x), *(*map[AuditKind]int)(y))
	}
	return reflect.NewAt(t, x).Elem().Len() == 0 && reflect.NewAt(t, y).Elem().Len() == 0 &&
		*(*unsafe.Pointer)(x) == nil == (*(*unsafe.Pointer)(y) == nil)
}

// sameEntries reports whether two maps are both nil or both not, with
// the same entries.
func sameEntries[K, V comparable](x, y map[K]V) bool {
	if (x == nil) != (y == nil) || len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}
