package export_test

import (
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/export.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("export.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("export.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}
