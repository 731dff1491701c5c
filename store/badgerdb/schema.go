package badgerdb

import (
	"context"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/loci-dev/loci/store/dedup"
)

// Schema is the declarative layout of the key space. Its content hash is
// tracked by the migration runner: changing it is a schema change, applied
// by SyncSchema.
const Schema = `badger key space v9
w/<wing> wn/<name> r/<room> rn/<wing>/<name> rw/<wing>/<room>
d/<drawer> dn/<room>/<name> dt/<room>/<created>/<drawer>
xh/<scope>/<hash> xf/<scope>/<fingerprint> (posting lists of id+length) xs/<scope>/<drawer> (near-index record: 40 band keys, 160 minimums, bag) dd/<drawer> ds/<drawer> (MinHash minimums, normalised text)
l/<link> ld/<drawer>/<link>
log/<seq>
meta/<key>
auth_state (the generated token's digest)
j/<job> ji/<job> (input) jt/<created>/<job> jq/<priority>/<created>/<job> (queued) ja/<created>/<job> (queued, running or paused) jf/<job>/<index>
src/<source+wing> (cursor) sd/<source+wing>/<document> (filed revision and chunks) sdo/<drawer> (its document) sds/<source+wing>/<document> (drawers deleted: file again)
tg/<trigger> (state) tgd/<trigger>/<delivery> (accepted webhook deliveries)
en/<entity> enn/<name> enk/<key> ena/<alias key> end/<deletion> (posting lists of entity ids) enl/<entity>\x00<link> mde/<drawer>\x00<entity> mne/<entity>\x00<drawer> rel/<fact> rle/<entity>\x00<fact> rll/<fact>\x00<link>
`

// SyncSchema brings the key space to Schema. It is idempotent.
//
// v4 -> v5: the MinHash band posting lists (xb/) give way to one near-index
// record per drawer (xs/), derived from the drawer's normalised text.
// v5 -> v6: the active-job keys (ja/), derived from the jobs.
// v6 -> v7: mining's source state (src/, sd/); new, nothing to derive.
// v7 -> v8: the near-index records and sketch values are sketched again
// (four-character runs, 40 bands of 4, one-permutation MinHash), from the
// normalised text each sketch value keeps; trigger state (tg/, tgd/) and
// entities (en/ and their indexes) are new, nothing to derive.
// v8 -> v9: mining's state is per source and wing (src/, sd/ keyed by
// store.TargetKey; data step 4 moves the v8 states), with the chunk owners
// (sdo/) and the documents to file again (sds/).
func (db *DB) SyncSchema(ctx context.Context) error {
	if err := db.CheckWritable(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	wb := db.bdb.NewWriteBatch()
	defer wb.Cancel()
	err := db.bdb.View(func(txn *badger.Txn) error {
		jobs := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pJob), PrefetchValues: true})
		defer jobs.Close()
		for jobs.Rewind(); jobs.Valid(); jobs.Next() {
			var r jobRecord
			if err := jobs.Item().Value(func(b []byte) error { return decode(b, &r) }); err != nil || r.ID == "" {
				continue
			}
			j := r.job()
			key := jobActiveKey(j)
			var err error
			if j.Finished() {
				err = wb.Delete(key)
			} else {
				err = wb.Set(key, nil)
			}
			if err != nil {
				return err
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pBand)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
		}
		it2 := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pDedup), PrefetchValues: true})
		defer it2.Close()
		for it2.Rewind(); it2.Valid(); it2.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var rec dedupRecord
			if err := it2.Item().Value(func(b []byte) error { return decode(b, &rec) }); err != nil {
				continue // unreadable records are left to the data steps
			}
			r := rec.record()
			t := &tx{txn: txn}
			mins, norm, err := t.DedupSketch(r.DrawerID)
			if err != nil || mins == nil {
				continue // too short to be near: no record
			}
			sk := dedup.MakeSketch(norm)
			r.Bands, r.Mins, r.Bag = sk.Bands, sk.Mins, sk.Bag
			e, ok := entryOf(r)
			if !ok {
				continue
			}
			if _, err := uuid.Parse(r.DrawerID); err != nil {
				continue
			}
			if err := wb.Set(nearKey(r.Scope, e.id), encodeNear(e)); err != nil {
				return err
			}
			if err := wb.Set(k(pSketch, r.DrawerID), sketchValue(sk.Mins, norm)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return wb.Flush()
}
