package postgres

import (
	"encoding/binary"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// Deduplication (schema/20_dedup.sql): a current drawer's dedup record is
// one row of dedup, its MinHash bands rows of dedup_bands, what it carries
// as a near candidate a row of dedup_near, its similar_to links rows of
// links. Badger keeps the near-duplicate index in the
// daemon's memory, loaded at a start (store.NearLoader); here the database
// answers it from an index, so every daemon sees every other's writes at
// once and nothing is loaded: DedupNear is one query, one index scan per
// band (docs/DECISIONS.md). Each write method is one statement: every
// statement is a round trip under the writer lock that serialises the
// writes of every daemon.

// maxBandDrawers is the number of a scope's drawers above which a band is
// not read: a band that many drawers share is uninformative (like a stop
// word), and reading it would make every write into a room of
// near-identical drawers visit all of them. Badger caps its bands at the
// same size (badgerdb.MaxBandPostings).
const maxBandDrawers = 512

// dedupRow is the rec column of dedup: the record without its sketch
// (its mins and norm columns), near entry (dedup_near) and bands
// (dedup_bands), as Badger keeps it.
type dedupRow struct {
	DrawerID    string `json:"drawer_id"`
	Scope       string `json:"scope"`
	Hash        string `json:"hash"`
	Fingerprint string `json:"fingerprint"`
	NormLen     int    `json:"norm_len"`
	Distinct    int    `json:"distinct,omitempty"`
}

// DedupByHash lists the current drawers of a scope with that exact hash,
// oldest first.
func (t *tx) DedupByHash(scope, hash string) ([]string, error) {
	return t.strings("SELECT drawer_id FROM dedup WHERE scope = $1 AND hash = $2 ORDER BY seq", scope, hash)
}

// DedupByFingerprint lists the current drawers of a scope with that
// normalised fingerprint, oldest first.
func (t *tx) DedupByFingerprint(scope, fp string) ([]string, error) {
	return t.strings("SELECT drawer_id FROM dedup WHERE scope = $1 AND fingerprint = $2 ORDER BY seq", scope, fp)
}

// nearQuery is DedupNear's query. Each band ($2) is read once, from the
// index alone: at most maxBandDrawers+1 of its rows in the scope, so that
// a band shared by more is dropped whole, the others' rows kept within the
// length window [$3, $4]; each drawer is then kept once (DISTINCT) and its
// candidate bytes read by its key (dedup_near).
var nearQuery = `SELECT c.drawer, c.norm_len, d.near
FROM (SELECT DISTINCT l.drawer, l.norm_len
      FROM unnest($2::bigint[]) AS u(band)
      CROSS JOIN LATERAL (
          SELECT r.drawer, r.norm_len, count(*) OVER () AS n
          FROM (SELECT b.drawer, b.norm_len FROM dedup_bands b WHERE b.scope = $1 AND b.band = u.band
                LIMIT ` + strconv.Itoa(maxBandDrawers+1) + `) r
      ) l
      WHERE l.n <= ` + strconv.Itoa(maxBandDrawers) + ` AND l.norm_len BETWEEN $3 AND $4) c
JOIN dedup_near d ON d.drawer = c.drawer`

// DedupNear visits, once each, the current drawers of a scope that share a
// MinHash band with bands and whose normalised length is within [lo, hi].
// A read sees its snapshot, a write its own writes too: both see what the
// writer would.
func (t *tx) DedupNear(scope string, bands [][8]byte, lo, hi int, fn func(store.NearCandidate)) error {
	if len(bands) == 0 {
		return nil
	}
	words := make([]int64, len(bands))
	for i, b := range bands {
		words[i] = bandWord(b)
	}
	return t.rows(nearQuery, []any{scope, words, lo, hi}, func(r pgx.Rows) (bool, error) {
		var id pgtype.UUID
		var n int
		var near []byte
		if err := r.Scan(&id, &n, &near); err != nil {
			return false, t.check(err)
		}
		if len(near) != nearLen {
			return false, fault.New(fault.StoreMalformed, "a stored near-duplicate entry has an unexpected length",
				"the database was changed by something other than loci; restore it from a backup")
		}
		// The candidate's bytes alias near, which this row owns.
		fn(store.NearCandidate{ID: uuid.UUID(id.Bytes), NormLen: n, Mins: near[:minsLow:minsLow], Bag: near[minsLow:]})
		return true, nil
	})
}

// minsLow and nearLen size a near entry: the low byte of each minimum,
// then the character bag.
const (
	minsLow = dedup.Bands * dedup.Rows
	nearLen = minsLow + dedup.BagSize
)

// bandWord is a band as its column holds it.
func bandWord(b [8]byte) int64 { return int64(binary.BigEndian.Uint64(b[:])) }

// DedupRecord is a current drawer's dedup record, without its sketch; nil
// when it has none.
func (t *tx) DedupRecord(drawerID string) (*store.DedupRecord, error) {
	r, err := get[dedupRow](t, "SELECT rec FROM dedup WHERE drawer_id = $1", drawerID)
	if r == nil || err != nil {
		return nil, err
	}
	return &store.DedupRecord{DrawerID: r.DrawerID, Scope: r.Scope, Hash: r.Hash, Fingerprint: r.Fingerprint,
		NormLen: r.NormLen, Distinct: r.Distinct}, nil
}

// DedupSketch is a current drawer's MinHash minimums and normalised text;
// nil minimums when it has none.
func (t *tx) DedupSketch(drawerID string) (mins []uint16, norm string, err error) {
	var raw, text []byte
	ok, err := t.row("SELECT mins, norm FROM dedup WHERE drawer_id = $1", []any{drawerID}, &raw, &text)
	if !ok || err != nil || len(raw) < 2 {
		return nil, "", err
	}
	if len(raw)%2 != 0 {
		return nil, "", fault.New(fault.StoreMalformed, "a stored sketch has an odd length",
			"the database was changed by something other than loci; restore it from a backup")
	}
	mins = make([]uint16, len(raw)/2)
	for i := range mins {
		mins[i] = binary.BigEndian.Uint16(raw[2*i:])
	}
	return mins, string(text), nil
}

// Links is a drawer's similar_to links, by id.
func (t *tx) Links(drawerID string) ([]store.Link, error) {
	return all[store.Link](t, "SELECT rec FROM links WHERE older = $1 OR newer = $1 ORDER BY id", drawerID)
}

// LinkEnds is a drawer's similar_to links as what ranks them (kind,
// similarity, time), by id: one query, as Links.
func (t *tx) LinkEnds(drawerID string) ([]store.LinkEnd, error) {
	ls, err := t.Links(drawerID)
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	out := make([]store.LinkEnd, len(ls))
	for i, l := range ls {
		out[i] = store.LinkEnd{ID: l.ID, Kind: l.Kind, Similarity: l.Signals.Similarity, CreatedAt: l.CreatedAt}
	}
	return out, nil
}

// Link is a similar_to link by id; nil when there is none.
func (t *tx) Link(id string) (*store.Link, error) {
	return get[store.Link](t, "SELECT rec FROM links WHERE id = $1", id)
}

// putDedup writes the record, its near entry and its bands in one
// statement: the bands of a record it replaces are deleted, the new ones
// inserted in one go (unnest).
const putDedup = `WITH gone AS (
    DELETE FROM dedup_bands b USING dedup o
    WHERE o.drawer_id = $1 AND b.scope = o.scope AND b.band = ANY(o.bands) AND b.drawer = $9
), d AS (
    INSERT INTO dedup (drawer_id, scope, hash, fingerprint, mins, norm, bands, rec)
    VALUES ($1, $2, $3, $4, $5, $6, $8, $10)
    ON CONFLICT (drawer_id) DO UPDATE SET scope = EXCLUDED.scope, hash = EXCLUDED.hash,
        fingerprint = EXCLUDED.fingerprint, mins = EXCLUDED.mins, norm = EXCLUDED.norm,
        bands = EXCLUDED.bands, rec = EXCLUDED.rec
), n AS (
    INSERT INTO dedup_near (drawer, near) SELECT $9, $7::bytea WHERE $7::bytea IS NOT NULL
    ON CONFLICT (drawer) DO UPDATE SET near = EXCLUDED.near
), nn AS (
    DELETE FROM dedup_near WHERE drawer = $9 AND $7::bytea IS NULL
)
INSERT INTO dedup_bands (scope, band, norm_len, drawer)
SELECT $2, band, $11, $9 FROM unnest($8::bigint[]) AS band`

// PutDedup writes a current drawer's dedup record: its exact and
// normalised keys, its sketch and, when it has a whole one and a UUID,
// its near-duplicate entry (its bands).
func (t *tx) PutDedup(r *store.DedupRecord) error {
	rec, err := enc(dedupRow{DrawerID: r.DrawerID, Scope: r.Scope, Hash: r.Hash, Fingerprint: r.Fingerprint,
		NormLen: r.NormLen, Distinct: r.Distinct})
	if err != nil {
		return err
	}
	var mins []byte
	if len(r.Mins) > 0 {
		mins = make([]byte, 2*len(r.Mins))
		for i, m := range r.Mins {
			binary.BigEndian.PutUint16(mins[2*i:], m)
		}
	}
	id := drawerUUID(r.DrawerID)
	words := []int64{}
	var near []byte
	if id.Valid && len(r.Bands) == dedup.Bands && len(r.Mins) == minsLow {
		words = make([]int64, len(r.Bands))
		for i, b := range r.Bands {
			words[i] = bandWord(b)
		}
		near = make([]byte, nearLen)
		for i, m := range r.Mins {
			near[i] = byte(m)
		}
		copy(near[minsLow:], r.Bag[:])
	}
	return t.exec(putDedup, r.DrawerID, r.Scope, r.Hash, r.Fingerprint, mins, []byte(r.Norm), near, words, id, rec,
		max(r.NormLen, 1))
}

// drawerUUID is a drawer id as the band rows hold it; not valid when the
// id is not a UUID (such a drawer has no near entry, as on Badger).
func drawerUUID(id string) pgtype.UUID {
	u, err := uuid.Parse(id)
	return pgtype.UUID{Bytes: u, Valid: err == nil}
}

// DeleteDedup removes a drawer's dedup record and its bands, in one
// statement.
func (t *tx) DeleteDedup(r *store.DedupRecord) error {
	return t.exec(`WITH d AS (DELETE FROM dedup WHERE drawer_id = $1 RETURNING scope, bands),
n AS (DELETE FROM dedup_near WHERE drawer = $2)
DELETE FROM dedup_bands b USING d WHERE b.scope = d.scope AND b.band = ANY(d.bands) AND b.drawer = $2`,
		r.DrawerID, drawerUUID(r.DrawerID))
}

// PutLink writes a similar_to link; a new one adds to the kept count of
// links (one written again does not).
func (t *tx) PutLink(l *store.Link) error {
	rec, err := enc(l)
	if err != nil {
		return err
	}
	return t.putCounted(`INSERT INTO links (id, older, newer, rec) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET older = EXCLUDED.older, newer = EXCLUDED.newer, rec = EXCLUDED.rec
RETURNING xmax = 0`, []any{l.ID, l.Older, l.Newer, rec}, store.Counts{Links: 1})
}

// DeleteLink removes a similar_to link; one that was there leaves the kept
// count of links.
func (t *tx) DeleteLink(l *store.Link) error {
	return t.deleteCounted(linksTable, l.ID, func(n int) store.Counts { return store.Counts{Links: -n} })
}
