package badgerdb

import (
	"github.com/loci-dev/loci/store"
)

// Trigger keys:
//
//	tg/<trigger>            the trigger's state (schedule slot, counters)
//	tgd/<trigger>/<id>      an accepted webhook delivery
const (
	pTrigger  = "tg/"
	pDelivery = "tgd/"
)

func (t *tx) TriggerState(name string) (*store.TriggerState, error) {
	var r triggerRecord
	ok, err := t.get(k(pTrigger, name), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.state(), nil
}

func (t *tx) TriggerStates(fn func(*store.TriggerState) bool) error {
	var err error
	if cerr := t.keys(k(pTrigger), false, func(_ []byte, val valueFn) bool {
		var r triggerRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.state())
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) Delivery(trigger, id string) (*store.Delivery, error) {
	var r deliveryRecord
	ok, err := t.get(k(pDelivery, trigger, "/", id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.delivery(), nil
}

func (t *tx) Deliveries(fn func(*store.Delivery) bool) error {
	var err error
	if cerr := t.keys(k(pDelivery), false, func(_ []byte, val valueFn) bool {
		var r deliveryRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.delivery())
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) PutTriggerState(s *store.TriggerState) error {
	return t.put(k(pTrigger, s.Name), triggerRec(s))
}

func (t *tx) DeleteTriggerState(name string) error {
	var keys [][]byte
	if cerr := t.keys(k(pDelivery, name, "/"), false, func(key []byte, _ valueFn) bool {
		keys = append(keys, append([]byte(nil), key...))
		return true
	}); cerr != nil {
		return cerr
	}
	for _, key := range keys {
		if err := t.del(key); err != nil {
			return err
		}
	}
	return t.del(k(pTrigger, name))
}

func (t *tx) PutDelivery(d *store.Delivery) error {
	return t.put(k(pDelivery, d.Trigger, "/", d.ID), deliveryRec(d))
}

func (t *tx) DeleteDelivery(trigger, id string) error {
	return t.del(k(pDelivery, trigger, "/", id))
}
