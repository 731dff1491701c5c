package actors

import (
	"fmt"
	"testing"

	"github.com/loci-dev/loci/store"
)

// Trigger and entity changes become their frames; the kinds the event
// table does not name are not announced.
func TestEventOfTriggerAndEntity(t *testing.T) {
	for _, c := range []struct {
		ch   store.Change
		want Event
		ok   bool
	}{
		{store.Change{Kind: store.ChangeTrigger, Action: "coalesced", ID: "hook"}, Event{Kind: "trigger", Action: store.ActionUpdated, ID: "hook", Status: "coalesced"}, true},
		{store.Change{Kind: store.ChangeTrigger, Action: "changed", ID: "nightly"}, Event{Kind: "trigger", Action: store.ActionUpdated, ID: "nightly", Status: "changed"}, true},
		{store.Change{Kind: store.ChangeEntity, Action: store.ActionCreated, ID: "e1"}, Event{Kind: "entity", Action: store.ActionCreated, ID: "e1"}, true},
		{store.Change{Kind: store.ChangeLink, Action: store.ActionCreated, ID: "l1"}, Event{}, false},
	} {
		t.Run(fmt.Sprintf("%s %s %s", c.ch.Kind, c.ch.Action, c.ch.ID), func(t *testing.T) {
			got, ok := eventOf(nil, c.ch)
			if ok != c.ok || got != c.want {
				t.Errorf("%+v: %+v %v, want %+v %v", c.ch, got, ok, c.want, c.ok)
			}
		})
	}
}
