package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/fault"
)

// The decoder's type mismatches: "cannot decode TOML string into struct
// field config.Server.Port of type int", "cannot store a table in a int".
var (
	decodeMismatch = regexp.MustCompile(`cannot decode TOML ([a-z ]+?) into `)
	storeMismatch  = regexp.MustCompile(`cannot store (?:a|an) (table|array table) in`)
)

// tomlKinds names a TOML value's type for a person.
var tomlKinds = map[string]string{
	"string": "a string", "integer": "a whole number", "float": "a decimal number", "boolean": "true or false",
	"array": "a list", "inline table": "a table", "table": "a table", "array table": "a list of tables",
	"datetime": "a date and time", "local datetime": "a date and time", "local date": "a date", "local time": "a time",
}

// decodeError renders a TOML decoding error: a value of the wrong type
// names the key as the file writes it and the type it takes, never the Go
// field behind it; any other error keeps the decoder's words (without its
// "toml:" prefix) with its position and key.
func decodeError(de *toml.DecodeError) error {
	row, col := de.Position()
	key := strings.Join(de.Key(), ".")
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	got := ""
	if m := decodeMismatch.FindStringSubmatch(msg); m != nil {
		got = m[1]
	} else if m := storeMismatch.FindStringSubmatch(msg); m != nil {
		got = m[1]
	}
	if got != "" && key != "" {
		if g, ok := tomlKinds[got]; ok {
			got = g
		} else {
			got = "a TOML " + got
		}
		want, help := "of another type", ""
		if t := keyType(reflect.TypeOf(Config{}), de.Key()); t != nil {
			want = "must be " + valueKind(t)
			// A table says its keys, and an example when there is one.
			if keys := tableKeys(t); keys != "" {
				want += " (keys: " + keys + ")"
				help = "give " + key + " a table"
				if ex, ok := tableExamples[key]; ok {
					help += ", e.g. " + ex
				}
			}
		}
		if want == "of another type" {
			return fault.Newf(fault.ConfigInvalid, "give "+key+" a value of the type the settings table shows",
				"configuration file, line %d column %d: %s is %s, which it cannot be", row, col, key, got)
		}
		if help == "" {
			help = fmt.Sprintf("give %s %s", key, strings.TrimPrefix(want, "must be "))
		}
		return fault.Newf(fault.ConfigInvalid, help,
			"configuration file, line %d column %d: %s %s, not %s", row, col, key, want, got)
	}
	// Any Go type the decoder names is left out: it is not the user's.
	if i := strings.Index(msg, " into struct field "); i >= 0 {
		msg = msg[:i]
	}
	return fault.Newf(fault.ConfigInvalid, "fix the TOML at that position",
		"configuration file: %s at line %d column %d%s", msg, row, col, keyHint(key))
}

// tableExamples show a table setting written whole, for the message of
// a value that is not a table ("1h" where a timetable goes).
var tableExamples = map[string]string{
	"backup.schedule": `backup.schedule = { every = "1h" } (or every = "1d", at = "03:00" under [backup.schedule])`,
}

// tableKeys names a table's keys as the file writes them ("every, at");
// "" for a type that is no table of fixed keys.
func tableKeys(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "-" || tag == "" || !f.IsExported() {
			continue
		}
		keys = append(keys, tag)
	}
	return strings.Join(keys, ", ")
}

// keyType is the type a dotted configuration key decodes into, following
// toml tags, a map's element (the key names an entry) and a pointer's or
// list's element; nil when the key reaches no field.
func keyType(t reflect.Type, key []string) reflect.Type {
	for len(key) > 0 {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t, key = t.Elem(), key[1:]
			continue
		case reflect.Slice, reflect.Array:
			t = t.Elem()
			continue
		case reflect.Struct:
		default:
			return nil
		}
		f, ok := tomlField(t, key[0])
		if !ok {
			return nil
		}
		t, key = f.Type, key[1:]
	}
	return t
}

func tomlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == name || (tag == "" && strings.EqualFold(f.Name, name)) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// valueKind names the TOML a Go type takes.
func valueKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(valueKind(t.Elem()), "a "), "an ") + "s"
	}
	return "a table"
}
