package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var durationType = reflect.TypeFor[metav1.Duration]()

// describeDecodeError rewrites a decoding error so it names the field in the
// file's own terms ("mailbox.batchSize: ..."), not Go's.
func describeDecodeError(js []byte, err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: must be a %s, not a %s", filePath(typeErr.Field), kindName(typeErr.Type), typeErr.Value)
	}
	// Errors raised by a field's own decoder (a bad duration) carry no
	// path; find the field by walking the document against the file type.
	var doc any
	if json.Unmarshal(js, &doc) == nil {
		if path, msg := findBadDuration(doc, reflect.TypeFor[fileSpec](), nil); path != "" {
			return path + ": " + msg
		}
	}
	return err.Error()
}

// filePath drops the Go names of embedded structs from a decoder's field
// path: every field of the file format is lowerCamelCase, Go types are not.
func filePath(goPath string) string {
	var out []string
	for _, seg := range strings.Split(goPath, ".") {
		if seg != "" && !unicode.IsUpper(rune(seg[0])) {
			out = append(out, seg)
		}
	}
	return strings.Join(out, ".")
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole number"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "mapping"
	default:
		return t.String()
	}
}

// findBadDuration returns the dotted path and reason of the first duration
// field in doc that time.ParseDuration refuses.
func findBadDuration(doc any, t reflect.Type, path []string) (string, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		s, ok := doc.(string)
		if !ok {
			return strings.Join(path, "."), `must be a duration such as "100ms" or "1h"`
		}
		if _, err := time.ParseDuration(s); err != nil {
			return strings.Join(path, "."), fmt.Sprintf(`invalid duration %q (use e.g. "100ms", "5m", "1h")`, s)
		}
		return "", ""
	}
	obj, ok := doc.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return "", ""
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			if p, msg := findBadDuration(doc, f.Type, path); p != "" {
				return p, msg
			}
			continue
		}
		if v, ok := obj[name]; ok {
			if p, msg := findBadDuration(v, f.Type, append(path, name)); p != "" {
				return p, msg
			}
		}
	}
	return "", ""
}
