package store

import (
	"testing"
	"time"
)

// drawersOnly is a Reader that knows only drawers.
type drawersOnly struct {
	Reader
	m map[string]*Drawer
}

func (r drawersOnly) Drawer(id string) (*Drawer, error) { return r.m[id], nil }

// A fact holds at t as known at now while one of its evidence drawers
// known then is current then (a fact without a drawer holds on its own),
// and it is valid at t, recorded and not retracted by now.
func TestRelationshipHolds(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(d int) time.Time { return t0.AddDate(0, 0, d) }
	ptr := func(x time.Time) *time.Time { return &x }
	r := drawersOnly{m: map[string]*Drawer{
		"open":     {ID: "open", CreatedAt: at(0)},
		"closed":   {ID: "closed", CreatedAt: at(0), ValidTo: ptr(at(5))},
		"late":     {ID: "late", CreatedAt: at(8)},
		"replaced": {ID: "replaced", CreatedAt: at(0), ValidTo: ptr(at(2))},
	}}
	cases := []struct {
		name string
		rel  Relationship
		now  time.Time
		want bool
	}{
		{"no evidence drawer", Relationship{ValidFrom: at(0), RecordedAt: at(0)}, at(6), true},
		{"its drawer current", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "open"}, at(6), true},
		{"its drawer closed by now", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "closed"}, at(6), false},
		{"its drawer closed only later", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "closed"}, at(4), true},
		{"its drawer gone", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "missing"}, at(6), false},
		{"a later assertion's drawer keeps it", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "replaced",
			Evidence: []Evidence{{Drawer: "open", RecordedAt: at(1)}}}, at(6), true},
		{"an assertion not yet known does not", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "replaced",
			Evidence: []Evidence{{Drawer: "open", RecordedAt: at(7)}}}, at(6), false},
		{"a drawer not yet filed is no evidence", Relationship{ValidFrom: at(0), RecordedAt: at(0), Drawer: "late"}, at(6), false},
		{"recorded after now", Relationship{ValidFrom: at(0), RecordedAt: at(7), Drawer: "open"}, at(6), false},
		{"retracted by now", Relationship{ValidFrom: at(0), RecordedAt: at(0), RetractedAt: ptr(at(3)), Drawer: "open"}, at(6), false},
		{"not yet valid at t", Relationship{ValidFrom: at(9), RecordedAt: at(0), Drawer: "open"}, at(6), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.rel.Holds(r, c.now, c.now)
			if err != nil || got != c.want {
				t.Fatalf("holds %v (%v), want %v", got, err, c.want)
			}
		})
	}
}
