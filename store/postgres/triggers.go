package postgres

import (
	"github.com/loci-dev/loci/store"
)

// TriggerState is not written yet.
func (t *tx) TriggerState(name string) (*store.TriggerState, error) {
	return nil, errTODO
}

// TriggerStates is not written yet.
func (t *tx) TriggerStates(fn func(*store.TriggerState) bool) error {
	return errTODO
}

// Delivery is not written yet.
func (t *tx) Delivery(trigger, id string) (*store.Delivery, error) {
	return nil, errTODO
}

// Deliveries is not written yet.
func (t *tx) Deliveries(fn func(*store.Delivery) bool) error {
	return errTODO
}

// PutTriggerState is not written yet.
func (t *tx) PutTriggerState(s *store.TriggerState) error {
	return errTODO
}

// DeleteTriggerState is not written yet.
func (t *tx) DeleteTriggerState(name string) error {
	return errTODO
}

// PutDelivery is not written yet.
func (t *tx) PutDelivery(d *store.Delivery) error {
	return errTODO
}

// DeleteDelivery is not written yet.
func (t *tx) DeleteDelivery(trigger, id string) error {
	return errTODO
}
