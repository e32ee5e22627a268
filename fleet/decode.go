package fleet

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxErrors bounds the errors one decode reports.
const maxErrors = 20

// maxValues bounds the values a file may hold once its aliases are
// expanded: a few kilobytes of YAML can alias their way to billions.
const maxValues = 100_000

// maxDepth bounds how deep values nest, aliases followed: an alias
// inside the value it names nests without end.
const maxDepth = 64

// fileError is one thing wrong in a decoded file: the file, the line (0
// when unknown), the field's path as the file writes it ("" for the
// document) and what is wrong.
type fileError struct {
	file string
	line int
	path string
	err  error
}

func (e *fileError) Error() string {
	var b strings.Builder
	b.WriteString(e.file)
	if e.line > 0 {
		b.WriteString(":" + strconv.Itoa(e.line))
	}
	b.WriteString(": ")
	if e.path != "" {
		b.WriteString(e.path + ": ")
	}
	b.WriteString(e.err.Error())
	return b.String()
}

func (e *fileError) Unwrap() error { return e.err }

// decoder converts a YAML node tree to JSON along a Go type, noting
// every field that the type does not have and every value of the wrong
// kind, at its line.
type decoder struct {
	file   string
	errs   []*fileError
	lines  map[string]int // the line of every path seen
	values int
	depth  int
	out    bytes.Buffer
}

// enter counts a level of nesting at n, reporting false (and the error,
// once) past maxDepth; leave ends it.
func (d *decoder) enter(n *yaml.Node, path string) bool {
	d.depth++
	if d.depth == maxDepth+1 {
		d.fail(n, path, "values nest more than %d deep (an alias inside the value it names?)", maxDepth)
	}
	return d.depth <= maxDepth
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &fileError{file: d.file, line: line, path: path, err: fmt.Errorf(format, args...)})
}

// decodeFile decodes data, one YAML or JSON document, into v (a pointer)
// strictly, returning the line of every path the file writes, or the
// errors found.
func decodeFile(file string, data []byte, v any) (lines map[string]int, errs []*fileError) {
	d := &decoder{file: file, lines: map[string]int{"": 1}}
	doc, err := parseOne(data)
	if err != nil {
		var fe *fileError
		if errors.As(err, &fe) {
			fe.file = file
			return nil, []*fileError{fe}
		}
		return nil, []*fileError{{file: file, err: err}}
	}
	if doc.Kind == yaml.ScalarNode && doc.ShortTag() == "!!null" {
		return nil, []*fileError{{file: file, line: doc.Line, err: errors.New("want a mapping, got null")}}
	}
	d.value(doc, reflect.TypeOf(v).Elem(), "")
	if len(d.errs) == 0 {
		dec := json.NewDecoder(bytes.NewReader(d.out.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			// Not seen by the walk: the JSON decoder has the last word,
			// said in the file's terms where it names a field.
			fe := &fileError{file: file, err: err}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				fe.line, fe.path = d.lines[te.Field], te.Field
				fe.err = fmt.Errorf("want %s, got %s", kindOf(te.Type), te.Value)
			}
			d.errs = append(d.errs, fe)
		}
	}
	return d.lines, d.errs
}

// parseOne parses data, which must hold one YAML document (JSON is
// YAML), into its root node.
func parseOne(data []byte) (root *yaml.Node, err error) {
	defer func() {
		if p := recover(); p != nil { // the parser's own failure on odd input
			err = fmt.Errorf("not YAML or JSON the parser can read (%v)", p)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, errors.New("the file is empty")
	case err != nil:
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &fileError{line: next.Line, err: errors.New("a second YAML document: a file holds one, without a '---' after it")}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return &doc, nil
}

// yamlError turns a parser error ("yaml: line 3: ...") into one that
// names the line as the other errors do.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if line, perr := strconv.Atoi(rest[:i]); perr == nil {
				return &fileError{line: line, err: errors.New(rest[i+2:])}
			}
		}
	}
	return errors.New(msg)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// value writes n as JSON for a value of type t at path, checking it
// against t.
func (d *decoder) value(n *yaml.Node, t reflect.Type, path string) {
	n, ok := d.resolve(n, path)
	if !ok {
		d.out.WriteString("null")
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		d.out.WriteString("null") // leaves the value as it is, as in JSON
		return
	}
	defer d.leave()
	if !d.enter(n, path) {
		d.out.WriteString("null")
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler):
		d.custom(n, t, path)
	case t.Kind() == reflect.Interface:
		d.anyNode(n, path)
	case t.Kind() == reflect.Struct:
		d.object(n, path, func(key string) (reflect.Type, bool, []string) {
			f, ok := fieldsOf(t)[key]
			if !ok {
				return nil, false, fieldNames(t)
			}
			return f, true, nil
		})
	case t.Kind() == reflect.Map:
		d.mapping(n, t, path)
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() == reflect.Uint8:
		d.scalar(n, t, path) // base64 text, as in JSON
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		d.list(n, t, path)
	default:
		d.scalar(n, t, path)
	}
}

// resolve follows n's aliases and counts the value against maxValues.
// An alias's value is reported at the alias: a copy of the node with the
// alias's line.
func (d *decoder) resolve(n *yaml.Node, path string) (*yaml.Node, bool) {
	if n.Kind == yaml.AliasNode {
		at := n
		for hops := 0; n.Kind == yaml.AliasNode; hops++ {
			if n.Alias == nil || hops > 100 {
				d.fail(at, path, "an alias that names no value")
				return nil, false
			}
			n = n.Alias
		}
		c := *n
		c.Line, c.Column = at.Line, at.Column
		n = &c
	}
	d.values++
	if d.values == maxValues+1 {
		d.fail(n, path, "the file holds more than %d values once its aliases are expanded", maxValues)
	}
	if d.values > maxValues {
		return nil, false
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, false
		}
		return d.resolve(n.Content[0], path)
	}
	if tag := n.ShortTag(); !knownTags[tag] {
		d.fail(n, path, "unknown tag %s", tag)
		return nil, false
	}
	return n, true
}

var knownTags = map[string]bool{"!!null": true, "!!bool": true, "!!str": true, "!!int": true, "!!float": true,
	"!!timestamp": true, "!!binary": true, "!!seq": true, "!!map": true, "!!merge": true}

// kindOf names what a value of type t is, for "want ..." messages.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string (base64)"
		}
		return "a list"
	}
	return "a string"
}

// describe says what n is, for "got ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(v)
	}
	return v
}

// scalar writes a plain value of type t: a string, a number, a bool.
func (d *decoder) scalar(n *yaml.Node, t reflect.Type, path string) {
	want := kindOf(t)
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, got %s", want, describe(n))
		return
	}
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Array:
		// A number, true or false written where text is wanted is the
		// text as written: flinkConfiguration: {parallelism.default: 4}.
		d.writeString(n.Value)
		return
	case reflect.Bool:
		if tag == "!!bool" {
			var b bool
			if n.Decode(&b) == nil {
				d.out.WriteString(strconv.FormatBool(b))
				return
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tag == "!!int" {
			var i int64
			if err := n.Decode(&i); err != nil || t.OverflowInt(i) {
				d.fail(n, path, "%s is out of range", n.Value)
				return
			}
			d.out.WriteString(strconv.FormatInt(i, 10))
			return
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if tag == "!!int" {
			var u uint64
			if err := n.Decode(&u); err != nil || t.OverflowUint(u) {
				d.fail(n, path, "%s is out of range (want a whole number, not negative)", n.Value)
				return
			}
			d.out.WriteString(strconv.FormatUint(u, 10))
			return
		}
	case reflect.Float32, reflect.Float64:
		if tag == "!!int" || tag == "!!float" {
			d.float(n, path)
			return
		}
	}
	d.fail(n, path, "want %s, got %s", want, describe(n))
}

func (d *decoder) float(n *yaml.Node, path string) {
	var f float64
	if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		d.fail(n, path, "want a finite number, got %s", describe(n))
		return
	}
	d.out.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
}

func (d *decoder) writeString(s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b, _ := json.Marshal(s)
	d.out.Write(b)
}

// custom writes a value of a type that decodes itself (a duration, a
// time) and has it decode what it got, reporting its error at n.
func (d *decoder) custom(n *yaml.Node, t reflect.Type, path string) {
	start := d.out.Len()
	before := len(d.errs)
	d.anyNode(n, path)
	if len(d.errs) > before {
		return
	}
	if err := json.Unmarshal(d.out.Bytes()[start:], reflect.New(t).Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			want := "a string"
			if !reflect.PointerTo(t).Implements(textUnmarshaler) {
				want = kindOf(t)
			}
			d.fail(n, path, "want %s, got %s", want, describe(n))
			return
		}
		if t == timeType {
			d.fail(n, path, "want a time as RFC 3339 writes it, such as \"2026-03-01T12:00:00Z\", got %s", describe(n))
			return
		}
		msg := err.Error()
		if pkg := t.PkgPath(); pkg != "" {
			// "policy: duration ..." for a policy.Duration: the
			// package's name means nothing in a spec file.
			msg = strings.TrimPrefix(msg, pkg[strings.LastIndex(pkg, "/")+1:]+": ")
		}
		d.fail(n, path, "%s", msg)
	}
}

// any writes n as the JSON value it reads as, whatever its type.
func (d *decoder) any(n *yaml.Node, path string) {
	n, ok := d.resolve(n, path)
	if !ok {
		d.out.WriteString("null")
		return
	}
	d.anyNode(n, path)
}

// anyNode is any of a resolved node.
func (d *decoder) anyNode(n *yaml.Node, path string) {
	defer d.leave()
	if !d.enter(n, path) {
		d.out.WriteString("null")
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		d.object(n, path, func(string) (reflect.Type, bool, []string) { return nil, true, nil })
		return
	case yaml.SequenceNode:
		d.out.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				d.out.WriteByte(',')
			}
			d.any(e, index(path, i, e, d.lines))
		}
		d.out.WriteByte(']')
		return
	}
	switch n.ShortTag() {
	case "!!null":
		d.out.WriteString("null")
	case "!!bool":
		var b bool
		_ = n.Decode(&b)
		d.out.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		var i int64
		if n.ShortTag() == "!!int" && n.Decode(&i) == nil {
			d.out.WriteString(strconv.FormatInt(i, 10))
			return
		}
		d.float(n, path)
	default:
		d.writeString(n.Value)
	}
}

// index is the path of the i-th element of the list at path, noting the
// element's line.
func index(path string, i int, e *yaml.Node, lines map[string]int) string {
	p := path + "[" + strconv.Itoa(i) + "]"
	if _, ok := lines[p]; !ok {
		lines[p] = e.Line
	}
	return p
}

// field is the path of key in the mapping at path.
func field(path, key string) string {
	ident := key != ""
	for i, r := range key {
		ident = ident && (r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && (r == '-' || '0' <= r && r <= '9'))
	}
	switch {
	case !ident:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

func (d *decoder) list(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got %s", describe(n))
		return
	}
	if t.Kind() == reflect.Array && len(n.Content) > t.Len() {
		d.fail(n, path, "want at most %d values, got %d", t.Len(), len(n.Content))
		return
	}
	d.out.WriteByte('[')
	for i, e := range n.Content {
		if i > 0 {
			d.out.WriteByte(',')
		}
		d.value(e, t.Elem(), index(path, i, e, d.lines))
	}
	d.out.WriteByte(']')
}

func (d *decoder) mapping(n *yaml.Node, t reflect.Type, path string) {
	kt := t.Key()
	textKey := reflect.PointerTo(kt).Implements(textUnmarshaler)
	d.objectOf(n, path, func(k *yaml.Node, key string) (reflect.Type, bool) {
		var err error
		switch {
		case kt.Kind() == reflect.String || textKey:
		case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Int64:
			_, err = strconv.ParseInt(key, 10, kt.Bits())
		case kt.Kind() >= reflect.Uint && kt.Kind() <= reflect.Uintptr:
			_, err = strconv.ParseUint(key, 10, kt.Bits())
		}
		if err != nil {
			d.fail(k, field(path, key), "want %s as the key, got %s", kindOf(kt), describe(k))
			return nil, false
		}
		return t.Elem(), true
	})
}

// object writes the mapping n; lookup says, for each key, the type of
// its value, or that there is no such field and the names there are.
func (d *decoder) object(n *yaml.Node, path string, lookup func(key string) (reflect.Type, bool, []string)) {
	d.objectOf(n, path, func(k *yaml.Node, key string) (reflect.Type, bool) {
		t, ok, names := lookup(key)
		if !ok {
			if hint := closest(key, names); hint != "" {
				d.fail(k, field(path, key), "unknown field (did you mean %q?)", hint)
			} else {
				d.fail(k, field(path, key), "unknown field")
			}
		}
		return t, ok
	})
}

// objectOf writes the mapping n as a JSON object, each value written
// through value along the type elem returns for its key (nil: any).
func (d *decoder) objectOf(n *yaml.Node, path string, elem func(k *yaml.Node, key string) (reflect.Type, bool)) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	pairs := d.pairs(n, path, nil, map[string]*yaml.Node{})
	d.out.WriteByte('{')
	first := true
	for _, p := range pairs {
		t, ok := elem(p.key, p.name)
		if !ok {
			continue
		}
		if !first {
			d.out.WriteByte(',')
		}
		first = false
		d.writeString(p.name)
		d.out.WriteByte(':')
		fp := field(path, p.name)
		if _, seen := d.lines[fp]; !seen {
			d.lines[fp] = p.key.Line
		}
		if t == nil {
			d.any(p.value, fp)
		} else {
			d.value(p.value, t, fp)
		}
	}
	d.out.WriteByte('}')
}

type pair struct {
	key   *yaml.Node
	name  string
	value *yaml.Node
}

// pairs lists the keys and values of the mapping n in order, refusing a
// key given twice. The keys of merged mappings ("<<: *defaults") come
// after n's own and only where n has none of the name.
func (d *decoder) pairs(n *yaml.Node, path string, out []pair, seen map[string]*yaml.Node) []pair {
	defer d.leave()
	if !d.enter(n, path) {
		return out
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		k, ok := d.resolve(k, path)
		if !ok {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "a key must be a plain value, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, field(path, k.Value), "given twice (first at line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{key: k, name: k.Value, value: v})
	}
	for _, m := range merges {
		m, ok := d.resolve(m, path)
		if !ok {
			continue
		}
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, s := range sources {
			s, ok := d.resolve(s, path)
			if !ok {
				continue
			}
			if s.Kind != yaml.MappingNode {
				d.fail(s, path, "want a mapping to merge (<<), got %s", describe(s))
				continue
			}
			own := map[string]*yaml.Node{}
			for _, p := range d.pairs(s, path, nil, own) {
				if _, dup := seen[p.name]; !dup {
					seen[p.name] = p.key
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// fields maps the JSON names of a struct's fields, embedded structs'
// promoted fields included, to their types, as encoding/json reads them.
var fields sync.Map // reflect.Type -> map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fields.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	type found struct {
		t      reflect.Type
		depth  int
		tagged bool
		count  int
	}
	all := map[string]*found{}
	var walk func(t reflect.Type, depth int, visiting map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, visiting map[reflect.Type]bool) {
		if visiting[t] {
			return
		}
		visiting[t] = true
		defer delete(visiting, t)
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, depth+1, visiting)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			tagged := name != ""
			if !tagged {
				name = f.Name
			}
			switch g := all[name]; {
			case g == nil || depth < g.depth || depth == g.depth && tagged && !g.tagged:
				all[name] = &found{t: f.Type, depth: depth, tagged: tagged, count: 1}
			case depth == g.depth && tagged == g.tagged:
				g.count++ // ambiguous: encoding/json drops it
			}
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	m := map[string]reflect.Type{}
	for name, f := range all {
		if f.count == 1 {
			m[name] = f.t
		}
	}
	fields.Store(t, m)
	return m
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for name := range fieldsOf(t) {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// closest is the name in names that key most likely misspells: one
// differing only in case, else the nearest within a third of its
// length in edits; "" if none is near.
func closest(key string, names []string) string {
	best, bestDist := "", len(key)/3+1
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt / 2
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
