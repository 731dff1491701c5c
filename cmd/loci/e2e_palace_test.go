package main_test

import (
	"fmt"
	"strings"
	"testing"
)

func TestPalaceOverREST(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)

	r := d.do("POST", "/api/wings", map[string]string{"name": "projects", "description": "work"})
	if r.status != 201 || r.body["created"] != true {
		t.Fatalf("create wing %d %s", r.status, r.raw)
	}
	if r = d.do("POST", "/api/wings", map[string]string{"name": "projects"}); r.status != 200 || r.body["created"] != false {
		t.Fatalf("existing wing %d %s", r.status, r.raw)
	}
	wingID := get[string](r.body, "wing", "id")
	if r = d.do("POST", "/api/wings/"+wingID+"/rooms", map[string]string{"name": "loci"}); r.status != 201 {
		t.Fatalf("create room by wing id %d %s", r.status, r.raw)
	}
	// A drawer whose name holds '/', addressed by name taking the rest of the path.
	base := "/api/wings/projects/rooms/loci/drawers"
	r = d.do("POST", base, map[string]any{"content": "package main\n", "name": "cmd/loci/main.go", "tags": []string{"go"}})
	if r.status != 201 {
		t.Fatalf("named drawer %d %s", r.status, r.raw)
	}
	named := get[string](r.body, "drawer", "id")
	if r = d.do("GET", base+"/cmd/loci/main.go", nil); r.status != 200 || r.body["id"] != named || r.body["content"] != "package main\n" {
		t.Fatalf("get by slashed name %d %s", r.status, r.raw)
	}
	if get[string](r.body, "provenance", "requested_by") != "http" || get[string](r.body, "source", "kind") != "manual" {
		t.Fatalf("provenance/source %s", r.raw)
	}
	if r = d.do("GET", base+"/"+named, nil); r.status != 200 {
		t.Fatalf("get by id %d", r.status)
	}
	if r = d.do("POST", base, map[string]any{"content": "other", "name": "cmd/loci/main.go"}); r.status != 409 || r.code() != "loci::palace::drawer_name_taken" {
		t.Fatalf("name taken %d %s", r.status, r.raw)
	}
	if r = d.do("POST", base, map[string]any{"content": "package main\n", "name": "cmd/loci/main.go"}); r.status != 200 || r.body["created"] != false {
		t.Fatalf("same name same content %d %s", r.status, r.raw)
	}

	// Unnamed: exact copy returns the existing drawer.
	text := "The writer batches waiting writes into one synced transaction."
	r = d.do("POST", base, map[string]any{"content": text, "requested_by": "mcp"})
	first := get[string](r.body, "drawer", "id")
	if r.status != 201 || get[string](r.body, "drawer", "provenance", "requested_by") != "mcp" {
		t.Fatalf("unnamed %d %s", r.status, r.raw)
	}
	if r = d.do("POST", base, map[string]any{"content": text}); r.status != 200 || get[string](r.body, "drawer", "id") != first {
		t.Fatalf("exact copy %d %s", r.status, r.raw)
	}
	r = d.do("POST", base, map[string]any{"content": strings.Replace(text, "synced", "synched", 1)})
	near := get[string](r.body, "drawer", "id")
	if r.status != 201 || len(get[[]any](r.body, "similar")) != 1 {
		t.Fatalf("near copy %d %s", r.status, r.raw)
	}
	r = d.do("GET", "/api/drawers/"+first+"/duplicates", nil)
	sim := get[[]any](r.body, "similar")
	if len(sim) != 1 {
		t.Fatalf("duplicates %s", r.raw)
	}
	link := sim[0].(map[string]any)
	if link["side"] != "newer" || link["kind"] != "near" || link["drawer"] != near || get[float64](link, "signals", "threshold") != 0.9 {
		t.Fatalf("link as read %v", link)
	}
	// Deleting the link undoes the call.
	if r = d.do("DELETE", "/api/drawers/"+near+"/duplicates/"+first, nil); r.status != 200 {
		t.Fatalf("delete link %d %s", r.status, r.raw)
	}
	if r = d.do("GET", "/api/drawers/"+first+"/duplicates", nil); len(get[[]any](r.body, "similar")) != 0 {
		t.Fatalf("link survived %s", r.raw)
	}

	// Notes.
	note := map[string]any{"wing": "projects", "room": "notes", "content": "remember the milk", "uri": "file:///todo"}
	if r = d.do("POST", "/api/notes", note); r.status != 201 || get[string](r.body, "drawer", "source", "kind") != "note" {
		t.Fatalf("note %d %s", r.status, r.raw)
	}
	if r = d.do("POST", "/api/notes", note); r.status != 200 || r.body["created"] != false {
		t.Fatalf("same note %d %s", r.status, r.raw)
	}

	// Diary.
	for _, e := range []string{"first entry", "second entry"} {
		if r = d.do("POST", "/api/diary", map[string]any{"agent_identity": "claude", "wing": "projects", "content": e}); r.status != 201 {
			t.Fatalf("diary %d %s", r.status, r.raw)
		}
	}
	d.do("POST", "/api/diary", map[string]any{"agent_identity": "codex", "wing": "projects", "content": "first entry"})
	r = d.do("GET", "/api/diary?agent_identity=claude&wing=projects&limit=1", nil)
	entries := get[[]any](r.body, "entries")
	if len(entries) != 1 || entries[0].(map[string]any)["content"] != "second entry" {
		t.Fatalf("diary read %s", r.raw)
	}

	// Supersede with and without content, history from any version.
	r = d.do("POST", "/api/drawers/"+named+"/supersede", map[string]any{"content": "package main // v2\n"})
	repl := get[string](r.body, "replacement", "id")
	if r.status != 200 || get[string](r.body, "superseded", "superseded_by") != repl || get[[]any](r.body, "replacement", "tags")[0] != "go" {
		t.Fatalf("supersede %d %s", r.status, r.raw)
	}
	if r = d.do("POST", "/api/drawers/"+named+"/supersede", map[string]any{"content": "x"}); r.status != 409 || r.code() != "loci::palace::drawer_superseded" {
		t.Fatalf("supersede twice %d %s", r.status, r.raw)
	}
	for _, id := range []string{named, repl} {
		r = d.do("GET", "/api/drawers/"+id+"/history", nil)
		v := get[[]any](r.body, "versions")
		if len(v) != 2 || v[0].(map[string]any)["id"] != named || v[1].(map[string]any)["id"] != repl {
			t.Fatalf("history from %s: %s", id, r.raw)
		}
	}
	if r = d.do("GET", base+"/cmd/loci/main.go", nil); r.body["id"] != repl {
		t.Fatalf("name not taken over: %s", r.raw)
	}
	if r = d.do("POST", "/api/drawers/"+repl+"/supersede", nil); r.status != 200 || r.body["replacement"] != nil {
		t.Fatalf("invalidate %d %s", r.status, r.raw)
	}

	// Listing: newest first, previews only.
	r = d.do("GET", base+"?limit=2", nil)
	list := get[[]any](r.body, "drawers")
	if len(list) != 2 || strings.Contains(r.raw, `"content"`) {
		t.Fatalf("list %s", r.raw)
	}
	if list[0].(map[string]any)["id"] != near {
		t.Fatalf("not newest first: %s", r.raw)
	}

	// Wing with totals and rooms; deletes return removed counts.
	r = d.do("GET", "/api/wings/projects", nil)
	if len(get[[]any](r.body, "rooms")) != 3 {
		t.Fatalf("wing %s", r.raw)
	}
	if r = d.do("DELETE", "/api/wings/projects/rooms/notes", nil); get[float64](r.body, "removed", "drawers") != 1 || get[float64](r.body, "removed", "rooms") != 1 {
		t.Fatalf("delete room %s", r.raw)
	}
	if r = d.do("DELETE", base+"/"+first, nil); get[float64](r.body, "removed", "drawers") != 1 {
		t.Fatalf("delete drawer %s", r.raw)
	}
	r = d.do("DELETE", "/api/wings/projects", nil)
	if get[float64](r.body, "removed", "wings") != 1 || get[float64](r.body, "removed", "rooms") != 2 || get[float64](r.body, "removed", "drawers") != 6 {
		t.Fatalf("delete wing %s", r.raw)
	}
	if r = d.do("GET", "/api/wings/projects", nil); r.status != 404 || r.code() != "loci::palace::wing_not_found" {
		t.Fatalf("deleted wing %d %s", r.status, r.raw)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "a memory to keep", "name": "keep"})
	uuid := "0190c5a2-7b1e-7c3d-9f00-1234567890ab"
	tests := []struct {
		method, path string
		body         any
		headers      []string
		status       int
		code         string
	}{
		{"GET", "/api/wings", nil, []string{"X-Loci-Mode", "sometimes"}, 400, "loci::input::invalid"},
		{"GET", "/api/wings", nil, []string{"X-Loci-Mode", "disabled"}, 403, "loci::mode::forbidden"},
		{"POST", "/api/wings", map[string]string{"name": "x"}, []string{"X-Loci-Mode", "read_only"}, 403, "loci::mode::forbidden"},
		{"POST", "/api/wings", `{"name": }`, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings", `{"name": 3}`, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings", `{"name": "a", "nmae": "b"}`, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings", "", nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings", `{"name":"a"} {"name":"b"}`, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings", map[string]string{"name": "a/b"}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings", map[string]string{"name": " padded"}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings", map[string]string{"name": uuid}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings", map[string]string{"name": "bell\a"}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings", map[string]string{"name": ".."}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings/w/rooms", map[string]string{"name": ""}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings/" + uuid + "/rooms", map[string]string{"name": "r"}, nil, 404, "loci::palace::wing_not_found"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "   "}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "name": "a//b"}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "name": "../up"}, nil, 400, "loci::palace::path_invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "tags": []string{""}}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "requested_by": "fax"}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "valid_from": "yesterday"}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "x", "source": map[string]string{"kind": "email"}}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "other", "name": "keep"}, nil, 409, "loci::palace::drawer_name_taken"},
		{"POST", "/api/wings/w/rooms/" + uuid + "/drawers", map[string]any{"content": "x"}, nil, 404, "loci::palace::room_not_found"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=201", nil, nil, 400, "loci::input::invalid"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=-1", nil, nil, 400, "loci::input::invalid"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=ten", nil, nil, 400, "loci::input::invalid"},
		{"GET", "/api/wings/w/rooms/r/drawers/nothing-here", nil, nil, 404, "loci::palace::drawer_not_found"},
		{"GET", "/api/wings/w/rooms/r/drawers/" + uuid, nil, nil, 404, "loci::palace::drawer_not_found"},
		{"GET", "/api/wings/nowing/rooms/r/drawers", nil, nil, 404, "loci::palace::wing_not_found"},
		{"GET", "/api/wings/w/rooms/noroom", nil, nil, 404, "loci::palace::room_not_found"},
		{"POST", "/api/drawers/not-a-uuid/supersede", map[string]any{"content": "x"}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/drawers/" + uuid + "/supersede", map[string]any{"content": "x"}, nil, 404, "loci::palace::drawer_not_found"},
		{"POST", "/api/drawers/" + uuid + "/supersede", `{"content": 5}`, nil, 400, "loci::input::invalid"},
		{"GET", "/api/drawers/" + uuid + "/history", nil, nil, 404, "loci::palace::drawer_not_found"},
		{"GET", "/api/drawers/" + uuid + "/duplicates", nil, nil, 404, "loci::palace::drawer_not_found"},
		{"POST", "/api/notes", map[string]any{"room": "r", "content": "x"}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/diary", map[string]any{"wing": "w", "content": "x"}, nil, 400, "loci::input::invalid"},
		{"POST", "/api/diary", map[string]any{"agent_identity": " a", "wing": "w", "content": "x"}, nil, 400, "loci::input::invalid"},
		{"GET", "/api/diary?wing=w", nil, nil, 400, "loci::input::invalid"},
		{"GET", "/api/diary?agent_identity=a&wing=w&limit=1000", nil, nil, 400, "loci::input::invalid"},
		{"GET", "/api/nothing", nil, nil, 404, "loci::server::route_not_found"},
		{"PATCH", "/api/wings", nil, nil, 405, "loci::server::method_not_allowed"},
	}
	before := counts(d)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s", tt.method, tt.path), func(t *testing.T) {
			r := d.do(tt.method, tt.path, tt.body, tt.headers...)
			if r.status != tt.status || r.code() != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
			if r.body["error"] == "" || r.body["help"] == "" {
				t.Fatalf("body lacks error or help: %s", r.raw)
			}
		})
	}
	if after := counts(d); after != before {
		t.Fatalf("bad input changed the palace: %s -> %s", before, after)
	}
}
