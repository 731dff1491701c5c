package actors

import (
	"reflect"
	"testing"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/embed"
)

// EmbedSettings carries every field of a configured profile into the
// embedder's settings, by name, with the configuration's defaults filled
// in; a field added to one side and not the other fails here, so the
// conversion cannot fall behind.
func TestEmbedSettings(t *testing.T) {
	cfgT, setT := reflect.TypeFor[config.Profile](), reflect.TypeFor[embed.Settings]()
	for i := range cfgT.NumField() {
		f := cfgT.Field(i)
		if g, ok := setT.FieldByName(f.Name); !ok || g.Type != f.Type {
			t.Errorf("config.Profile.%s (%s) has no field of its name and type in embed.Settings: add it there and to EmbedSettings", f.Name, f.Type)
		}
	}
	for i := range setT.NumField() {
		if _, ok := cfgT.FieldByName(setT.Field(i).Name); !ok {
			t.Errorf("embed.Settings.%s has no field in config.Profile to be set from", setT.Field(i).Name)
		}
	}
	// Every field set (to a value no default gives): each arrives.
	var full config.Profile
	v := reflect.ValueOf(&full).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("value-of-" + cfgT.Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(100 + i))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"prog", cfgT.Field(i).Name}))
		default:
			t.Fatalf("config.Profile.%s: a %s this test does not fill", cfgT.Field(i).Name, f.Kind())
		}
	}
	full.Provider = "command"
	e := config.Embedding{Profiles: map[string]config.Profile{"full": full, "bare": {Provider: "hash"}, config.StaticProfile: {Provider: config.StaticProvider}}}
	got := EmbedSettings(e)
	if len(got) != 3 {
		t.Fatalf("converted %d profiles of 3", len(got))
	}
	for name := range e.Profiles {
		want, _ := e.ProfileNamed(name)
		g := reflect.ValueOf(got[name])
		w := reflect.ValueOf(want)
		for i := range cfgT.NumField() {
			n := cfgT.Field(i).Name
			if !reflect.DeepEqual(g.FieldByName(n).Interface(), w.Field(i).Interface()) {
				t.Errorf("profile %s: %s is %v, want %v", name, n, g.FieldByName(n).Interface(), w.Field(i).Interface())
			}
		}
	}
	// The defaults are the configuration's: a bare profile is runnable.
	if b := got["bare"]; b.BatchSize != 32 || b.TimeoutSecs != 30 || b.Dimension != 768 || b.Pipeline != "text-v1" {
		t.Errorf("bare profile without its defaults: %+v", b)
	}
	if s := got[config.StaticProfile]; s.Dimension != embed.StaticDim || s.Model != config.StaticModel {
		t.Errorf("static profile: %+v", s)
	}
	if _, err := embed.Open(got); err != nil {
		t.Fatalf("the converted settings do not open: %v", err)
	}
	// The command is the converted settings' own.
	got["full"].Command[0] = "changed"
	if e.Profiles["full"].Command[0] != "prog" {
		t.Error("the converted command shares the configuration's slice")
	}
}
