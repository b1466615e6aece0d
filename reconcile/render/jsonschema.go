// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// JSONSchema describes, as a JSON Schema (draft 2020-12), the JSON that
// encoding/json writes for values of v's type: what gpufleet's -o json
// outputs promise, generated from the very types they are written from,
// so the two cannot drift apart. Every object is closed: a field the
// schema does not name is a field gpufleet does not write.
func JSONSchema(kind, title string, v any) map[string]any {
	g := &schemaGen{defs: map[string]any{}, seen: map[reflect.Type]string{}}
	body := g.of(reflect.TypeOf(v))
	root := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://gpufleet.dev/schema/" + kind + ".json",
		"title":       title,
		"description": fmt.Sprintf("gpufleet's %s output, format version %d.", kind, FormatVersion),
	}
	// The envelope every output carries, then the body's own fields.
	props := map[string]any{
		"formatVersion": map[string]any{"const": FormatVersion},
		"kind":          map[string]any{"const": kind},
	}
	required := []string{"formatVersion", "kind"}
	if obj, ok := g.resolve(body); ok {
		for k, p := range obj["properties"].(map[string]any) {
			props[k] = p
		}
		if r, ok := obj["required"].([]string); ok {
			required = append(required, r...)
		}
	}
	root["type"] = "object"
	root["properties"] = props
	root["required"] = required
	root["additionalProperties"] = false
	if len(g.defs) > 0 {
		root["$defs"] = g.defs
	}
	return root
}

type schemaGen struct {
	defs map[string]any
	seen map[reflect.Type]string
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// resolve returns the object schema a reference or an inline object
// stands for.
func (g *schemaGen) resolve(s map[string]any) (map[string]any, bool) {
	if ref, ok := s["$ref"].(string); ok {
		s = g.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	}
	_, ok := s["properties"]
	return s, ok
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		// A type that writes itself says nothing the schema can check.
		return map[string]any{}
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		// encoding/json writes these as their text, struct or not.
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(g.of(t.Elem()))
	case reflect.Interface:
		return map[string]any{}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return nullable(map[string]any{"type": "array", "items": g.of(t.Elem())})
	case reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return nullable(map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())})
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("render: no JSON schema for %v", t))
}

// object is a struct's schema, kept once under $defs by type name, so
// recursive and shared types are written once.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	name := defName(t)
	if name != "" {
		if _, ok := g.seen[t]; ok {
			return map[string]any{"$ref": "#/$defs/" + name}
		}
		g.seen[t] = name
	}
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		slices.Sort(required)
		obj["required"] = required
	}
	if name == "" {
		return obj
	}
	g.defs[name] = obj
	return map[string]any{"$ref": "#/$defs/" + name}
}

// fields adds a struct's JSON fields, with those of embedded structs
// inlined as encoding/json does.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if !omit {
			*required = append(*required, name)
		}
	}
}

func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []string{typ, "null"}
		return c
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// defName names a struct type in $defs: its package's last element and
// its name, "planner.Plan"; "" for an unnamed struct.
func defName(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	pkg := t.PkgPath()
	pkg = pkg[strings.LastIndex(pkg, "/")+1:]
	return pkg + "." + strings.ReplaceAll(strings.ReplaceAll(t.Name(), "[", "_"), "]", "_")
}
