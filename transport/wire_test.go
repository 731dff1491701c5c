package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
)

// TestWireDecodesWhatTheDaemonSends keeps transport/wire, the client's view,
// in step with the types the handlers render.
func TestWireDecodesWhatTheDaemonSends(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	d := store.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: store.Source{Kind: "note", URI: "u", Agent: "a"}, Provenance: store.Provenance{RequestedBy: "cli", JobID: "j"},
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s", Supersedes: "p", Diary: true}
	want := api.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: api.Source{Kind: "note", URI: "u", Agent: "a"}, Provenance: api.Provenance{RequestedBy: "cli", JobID: "j"},
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s", Supersedes: "p", Diary: true}
	var got api.Drawer
	roundTrip(t, d, &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("drawer\n got %+v\nwant %+v", got, want)
	}

	room := actors.RoomInfo{Room: store.Room{ID: "r", WingID: "w", Name: "rn", Description: "d", CreatedAt: now}, WingName: "wn", DrawerCount: 2, Stored: 3}
	wing := actors.WingInfo{Wing: store.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now}, RoomCount: 1, DrawerCount: 2, Rooms: []actors.RoomInfo{room}}
	var gw api.Wing
	roundTrip(t, wing, &gw)
	ww := api.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now, RoomCount: 1, Drawers: 2,
		Rooms: []api.Room{{ID: "r", WingID: "w", Wing: "wn", Name: "rn", Description: "d", CreatedAt: now, Drawers: 2, Stored: 3}}}
	if !reflect.DeepEqual(gw, ww) {
		t.Fatalf("wing\n got %+v\nwant %+v", gw, ww)
	}

	var rm api.Removed
	roundTrip(t, store.Removed{Wings: 1, Rooms: 2, Drawers: 3}, &rm)
	if rm != (api.Removed{Wings: 1, Rooms: 2, Drawers: 3}) {
		t.Fatalf("removed %+v", rm)
	}
}

func roundTrip(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// A job's answers, one job or the list, never carry its input (a
// checkpoint's payload is memory content), and decode as api.Job.
func TestJobAnswersCarryNoInput(t *testing.T) {
	ts := newTestServer(t, false, "")
	status, job := ts.call(t, "POST", "/api/jobs", `{"type":"checkpoint","payload":{"items":[{"destination":"general","content":"the secret plan","tags":[],"source":{"kind":"manual"}}]}}`)
	if status != 202 {
		t.Fatalf("submit: %d %v", status, job)
	}
	id, _ := job["id"].(string)
	for _, path := range []string{"/api/jobs/" + id, "/api/jobs", "/api/jobs?kind=checkpoint"} {
		status, body := ts.call(t, "GET", path, "")
		raw, _ := json.Marshal(body)
		if status != 200 || bytes.Contains(raw, []byte("secret plan")) || bytes.Contains(raw, []byte(`"input"`)) {
			t.Fatalf("GET %s: %d %s", path, status, raw)
		}
		var one api.Job
		var list api.JobList
		if path == "/api/jobs/"+id {
			roundTrip(t, body, &one)
		} else {
			roundTrip(t, body, &list)
		}
	}
}
