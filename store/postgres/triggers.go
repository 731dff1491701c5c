package postgres

import (
	"github.com/loci-dev/loci/store"
)

// Triggers (schema/45_triggers.sql): each trigger's state and the webhook
// deliveries accepted for it. Each write is one statement.

// TriggerState is a trigger's state by name; nil when none is kept.
func (t *tx) TriggerState(name string) (*store.TriggerState, error) {
	return get[store.TriggerState](t, "SELECT rec FROM trigger_states WHERE name = $1", name)
}

// TriggerStates visits every trigger state, by name, until fn returns
// false.
func (t *tx) TriggerStates(fn func(*store.TriggerState) bool) error {
	return pagedRecs(t, 1, func(last []any, limit int) (string, []any) {
		return after("SELECT rec, name FROM trigger_states WHERE true", "name > $1", "name", nil, last, limit)
	}, fn)
}

// Delivery is a delivery remembered by its trigger and id; nil when none.
func (t *tx) Delivery(trigger, id string) (*store.Delivery, error) {
	return get[store.Delivery](t, "SELECT rec FROM trigger_deliveries WHERE trigger = $1 AND id = $2", trigger, id)
}

// Deliveries visits every remembered delivery, by trigger and id, until
// fn returns false.
func (t *tx) Deliveries(fn func(*store.Delivery) bool) error {
	return pagedRecs(t, 2, func(last []any, limit int) (string, []any) {
		return after("SELECT rec, trigger, id FROM trigger_deliveries WHERE true", "(trigger, id) > ($1, $2)",
			"trigger, id", nil, last, limit)
	}, fn)
}

// PutTriggerState stores a trigger's state, replacing it.
func (t *tx) PutTriggerState(s *store.TriggerState) error {
	rec, err := enc(s)
	if err != nil {
		return err
	}
	return t.exec("INSERT INTO trigger_states (name, rec) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET rec = EXCLUDED.rec", s.Name, rec)
}

// DeleteTriggerState forgets a trigger's state and its deliveries, in one
// statement.
func (t *tx) DeleteTriggerState(name string) error {
	return t.exec(`WITH deliveries AS (DELETE FROM trigger_deliveries WHERE trigger = $1)
DELETE FROM trigger_states WHERE name = $1`, name)
}

// PutDelivery remembers an accepted delivery, replacing it.
func (t *tx) PutDelivery(d *store.Delivery) error {
	rec, err := enc(d)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO trigger_deliveries (trigger, id, rec) VALUES ($1, $2, $3)
ON CONFLICT (trigger, id) DO UPDATE SET rec = EXCLUDED.rec`, d.Trigger, d.ID, rec)
}

// DeleteDelivery forgets a delivery.
func (t *tx) DeleteDelivery(trigger, id string) error {
	return t.exec("DELETE FROM trigger_deliveries WHERE trigger = $1 AND id = $2", trigger, id)
}
