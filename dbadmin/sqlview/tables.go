package sqlview

import (
	"encoding/json"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/loci-dev/loci/store"
)

// The column types.
var (
	tID    = types.MustCreateStringWithDefaults(query.Type_VARCHAR, 255)
	tText  = types.Text
	tLong  = types.LongText
	tTime  = types.MustCreateDatetimeType(query.Type_DATETIME, 6)
	tInt   = types.Int64
	tFloat = types.Float64
	tBool  = types.Boolean
	tJSON  = types.JSON
)

// column is one column of a table.
type column struct {
	name     string
	typ      sql.Type
	nullable bool
	doc      string
}

// indexDef is a column whose equality the store answers from an index:
// lookup reads the rows holding key. A two-column index (drawers by room
// and time) also takes the range of its second column.
type indexDef struct {
	name   string
	cols   []string
	unique bool
	lookup func(q *run, key string, span *timeSpan) pager[sql.Row]
	// keysLookup, when set, answers an equality with the table's keyCols
	// only (the other columns nil), from keys alone.
	keysLookup func(q *run, key string) pager[sql.Row]
}

// timeSpan is a range of created_at: [since, until), either end open when
// nil.
type timeSpan struct{ since, until *time.Time }

// tableDef is one table: its columns, its indexes and its full scan.
type tableDef struct {
	name    string
	doc     string
	cols    []column
	indexes []indexDef
	scan    func(q *run) pager[sql.Row]
	// keyCols are the columns keysScan gives (the others nil): a
	// statement that needs no others scans keys, not records.
	keyCols  map[string]bool
	keysScan func(q *run) pager[sql.Row]
}

func col(name string, typ sql.Type, doc string) column { return column{name: name, typ: typ, doc: doc} }
func ncol(name string, typ sql.Type, doc string) column {
	return column{name: name, typ: typ, doc: doc, nullable: true}
}

// Values as rows hold them. Times are DATETIME(6): the store's
// nanoseconds are cut to microseconds, so that what a row shows is what a
// predicate compares.
func tm(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}
func tmp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return tm(*t)
}
func str(s string) any {
	if s == "" {
		return nil
	}
	return s
}
func boolv(b bool) any {
	if b {
		return int8(1)
	}
	return int8(0)
}
func rawJSON(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m, &v) != nil {
		return types.JSONDocument{Val: string(m)}
	}
	return types.JSONDocument{Val: v}
}
func strsJSON(ss []string) any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return types.JSONDocument{Val: out}
}

// rowsOf turns a pager of records into rows.
func rowsOf[T any](p pager[T], conv func(T) []sql.Row) pager[sql.Row] {
	return pager[sql.Row]{
		next: func() ([]sql.Row, bool, error) {
			items, done, err := p.next()
			var out []sql.Row
			for _, it := range items {
				out = append(out, conv(it)...)
			}
			return out, done, err
		},
		stop: p.stop,
	}
}
func one[T any](conv func(T) sql.Row) func(T) []sql.Row {
	return func(t T) []sql.Row { return []sql.Row{conv(t)} }
}

// nonNil drops the nil results of point reads.
func nonNil[T any](items ...*T) []*T {
	var out []*T
	for _, it := range items {
		if it != nil {
			out = append(out, it)
		}
	}
	return out
}

// Pagers over the store's families.
func wingsP(q *run) pager[store.Wing] { return once(q.r.Wings) }
func roomsP(q *run) pager[store.Room] {
	return flat(q, wingsP(q), func(w store.Wing) pager[store.Room] {
		return once(func() ([]store.Room, error) { return q.r.Rooms(w.ID) })
	})
}
func drawersP(q *run) pager[*store.Drawer] {
	return flat(q, roomsP(q), func(r store.Room) pager[*store.Drawer] { return roomDrawers(q, r.ID, nil, nil) })
}
func entitiesP(q *run) pager[*store.Entity] { return visitPages(q, q.r.Entities) }
func factsP(q *run) pager[*store.Relationship] {
	// Every fact once: as its subject's.
	return flat(q, entitiesP(q), func(e *store.Entity) pager[*store.Relationship] {
		return keep(entityFacts(q, e.ID), func(r *store.Relationship) bool { return r.Subject == e.ID })
	})
}
func entityFacts(q *run, id string) pager[*store.Relationship] {
	return visitPages(q, func(fn func(*store.Relationship) bool) error { return q.r.EntityRelationships(id, fn) })
}
func entityMentions(q *run, id string) pager[*store.Mention] {
	return visitPages(q, func(fn func(*store.Mention) bool) error { return q.r.Mentions(id, fn) })
}
func sourcesP(q *run) pager[*store.SourceState] { return visitPages(q, q.r.Sources) }
func sourceDocs(q *run, key string) pager[*store.DocumentState] {
	return visitPages(q, func(fn func(*store.DocumentState) bool) error { return q.r.SourceDocuments(key, fn) })
}

// Row builders.
func wingRow(w store.Wing) sql.Row {
	return sql.Row{w.ID, w.Name, str(w.Description), tm(w.CreatedAt)}
}
func (q *run) roomRow(r store.Room) sql.Row {
	return sql.Row{r.ID, r.WingID, q.wingName(r.WingID), r.Name, str(r.Description), tm(r.CreatedAt)}
}
func (q *run) drawerRow(d *store.Drawer) sql.Row {
	return sql.Row{d.ID, d.WingID, q.wingName(d.WingID), d.RoomID, q.roomName(d.RoomID), str(d.Name), d.Content, strsJSON(d.Tags),
		d.Source.Kind, str(d.Source.URI), str(d.Source.Agent), rawJSON(d.Source.Origin), str(d.Provenance.RequestedBy), str(d.Provenance.JobID),
		tm(d.CreatedAt), tm(d.ValidFrom), tmp(d.ValidTo), boolv(d.Current()), str(d.SupersededBy), str(d.Supersedes), boolv(d.Diary), nil}
}

// drawerCols is the drawers table's width; embeddedCol its last column,
// filled by the row iterator when the statement needs it.
const (
	drawerCols  = 22
	embeddedCol = 21
)

// drawerKeyRows is a room's drawers as their keys give them: ids and
// names, the other columns nil (DrawerIDs reads the room's key index, not
// the records: a room's ids are held at once).
func (q *run) drawerKeyRows(r store.Room) ([]sql.Row, error) {
	ids, err := q.r.DrawerIDs(r.ID)
	out := make([]sql.Row, len(ids))
	wing := q.wingName(r.WingID)
	for i, id := range ids {
		row := make(sql.Row, drawerCols)
		row[0], row[1], row[2], row[3], row[4] = id, r.WingID, wing, r.ID, r.Name
		out[i] = row
	}
	return out, err
}

func linkRow(l *store.Link) sql.Row {
	return sql.Row{l.ID, l.Older, l.Newer, string(l.Kind), l.Signals.Similarity, l.Signals.Threshold,
		boolv(l.Signals.SameHash), boolv(l.Signals.SameFingerprint), tm(l.CreatedAt)}
}
func entityRow(e *store.Entity) sql.Row {
	return sql.Row{e.ID, e.Name, e.Kind, e.Key, strsJSON(e.Aliases), tm(e.CreatedAt)}
}
func aliasRows(e *store.Entity) []sql.Row {
	out := make([]sql.Row, len(e.Aliases))
	for i, a := range e.Aliases {
		out[i] = sql.Row{e.ID, e.Name, a}
	}
	return out
}
func mentionRow(m *store.Mention) sql.Row {
	return sql.Row{m.Drawer, m.Entity, m.Name, str(m.Rule), m.Confidence, str(m.Extractor), str(m.Origin), tm(m.CreatedAt)}
}
func factRow(r *store.Relationship) sql.Row {
	ev := make([]any, len(r.Evidence))
	for i, e := range r.Evidence {
		ev[i] = map[string]any{"id": e.ID, "drawer_id": e.Drawer, "job_id": e.Job, "extractor": e.Extractor,
			"confidence": e.Confidence, "recorded_at": e.RecordedAt.UTC().Format(time.RFC3339Nano)}
	}
	return sql.Row{r.ID, r.Subject, r.Predicate, r.Object, r.Confidence, tm(r.ValidFrom), tmp(r.ValidTo), tm(r.RecordedAt), tmp(r.RetractedAt),
		boolv(r.RetractedAt == nil && r.SupersededBy == ""), str(r.Drawer), str(r.Job), str(r.Extractor), str(r.SupersededBy), str(r.Reason), str(r.ClosedBy),
		int64(len(r.Evidence)), types.JSONDocument{Val: ev}}
}
func factLinkRow(l store.RelationshipLink) sql.Row {
	return sql.Row{l.ID, l.From, l.To, l.Kind, str(l.Reason), str(l.Drawer), str(l.Job), tm(l.CreatedAt)}
}
func entityLinkRow(l store.EntityLink) sql.Row {
	return sql.Row{l.ID, l.From, l.To, l.Kind, tm(l.CreatedAt)}
}
func jobRow(j *store.Job) sql.Row {
	var total any
	if j.Progress.Total != nil {
		total = *j.Progress.Total
	}
	return sql.Row{j.ID, j.Kind, j.Status, int64(j.Priority), j.Priority.String(), str(j.RequestedBy), tm(j.CreatedAt), tm(j.UpdatedAt),
		tmp(j.StartedAt), tmp(j.FinishedAt), j.Progress.Current, total, str(j.Progress.Message), int64(j.Attempt), int64(j.RecoveryAttempts),
		str(j.Error), str(j.LeaseOwner), tmp(j.LeaseExpiresAt), boolv(j.PauseRequested), boolv(j.CancelRequested), str(j.Lane), str(j.Node),
		boolv(len(j.Checkpoint) > 0 && string(j.Checkpoint) != "null"), rawJSON(j.Result)}
}
func sourceRow(s *store.SourceState) sql.Row {
	return sql.Row{s.Key, s.Identity.Adapter, str(s.Identity.Account), str(s.Identity.Locator), str(s.WingID), rawJSON(s.Cursor),
		int64(s.Documents), str(s.LastJob), tm(s.LastRun)}
}
func documentRow(d *store.DocumentState) sql.Row {
	chunks := make([]any, len(d.Chunks))
	for i, c := range d.Chunks {
		chunks[i] = map[string]any{"drawer": c.Drawer, "hash": c.Hash}
	}
	return sql.Row{d.Source, d.ID, str(d.WingID), str(d.Revision), str(d.Meta), int64(len(d.Chunks)), types.JSONDocument{Val: chunks}}
}
func triggerRow(t *store.TriggerState) sql.Row {
	return sql.Row{t.Name, tmp(t.Due), t.Fired, t.Coalesced, t.Failed, t.Deliveries, tmp(t.LastFired), str(t.LastJob), str(t.LastError),
		int64(t.Failures), tmp(t.Claimed)}
}

// defs is every table.
var defs = []*tableDef{
	{
		name: "wings", doc: "The palace's wings (its top level).",
		cols: []column{
			col("id", tID, "the wing's id"), col("name", tID, "its name (unique)"),
			ncol("description", tText, "its description"), col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Wing, error) { w, err := q.r.Wing(k); return nonNil(w), err }), one(func(w *store.Wing) sql.Row { return wingRow(*w) }))
			}},
			{name: "name", cols: []string{"name"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Wing, error) { w, err := q.r.WingByName(k); return nonNil(w), err }), one(func(w *store.Wing) sql.Row { return wingRow(*w) }))
			}},
		},
		scan: func(q *run) pager[sql.Row] { return rowsOf(wingsP(q), one(wingRow)) },
	},
	{
		name: "rooms", doc: "The rooms of every wing.",
		cols: []column{
			col("id", tID, "the room's id"), col("wing_id", tID, "its wing's id (wings.id)"), col("wing", tID, "its wing's name"),
			col("name", tID, "its name (unique in its wing)"), ncol("description", tText, "its description"), col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Room, error) { r, err := q.r.Room(k); return nonNil(r), err }), one(func(r *store.Room) sql.Row { return q.roomRow(*r) }))
			}},
			{name: "wing_id", cols: []string{"wing_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]store.Room, error) { return q.r.Rooms(k) }), one(q.roomRow))
			}},
		},
		scan: func(q *run) pager[sql.Row] { return rowsOf(roomsP(q), one(q.roomRow)) },
	},
	{
		name: "drawers", doc: "Every stored drawer, current and superseded (content included, vectors not). Newest first within a room; created_at ranges are answered by the room's time index when room_id is given.",
		cols: []column{
			col("id", tID, "the drawer's id"), col("wing_id", tID, "its wing's id"), col("wing", tID, "its wing's name"),
			col("room_id", tID, "its room's id"), col("room", tID, "its room's name"), ncol("name", tID, "its name within the room (NULL when unnamed)"),
			col("content", tLong, "its text"), col("tags", tJSON, "its tags (a JSON array of strings)"),
			col("source_kind", tID, "where the content came from: file, manual, transcript, note or other"),
			ncol("source_uri", tText, "the source's URI"), ncol("source_agent", tID, "the agent that wrote it"),
			ncol("source_origin", tJSON, "the source's origin record (JSON)"), ncol("requested_by", tID, "the channel that wrote it: cli, http, mcp, daemon or unknown"),
			ncol("job_id", tID, "the job that filed it"), col("created_at", tTime, "when it was filed (UTC)"),
			col("valid_from", tTime, "start of its validity (UTC)"), ncol("valid_to", tTime, "end of its validity (UTC); NULL while current"),
			col("current", tBool, "true while valid (valid_to IS NULL)"), ncol("superseded_by", tID, "the drawer that replaced it"),
			ncol("supersedes", tID, "the drawer it replaced"), col("diary", tBool, "a diary entry"),
			ncol("embedded", tBool, "whether it has a vector in the serving embedding profile (NULL when no profile has served yet); read only when asked for"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Drawer, error) { d, err := q.r.Drawer(k); return nonNil(d), err }), one(q.drawerRow))
			}},
			{name: "room_time", cols: []string{"room_id", "created_at"}, lookup: func(q *run, k string, s *timeSpan) pager[sql.Row] {
				if s == nil {
					s = &timeSpan{}
				}
				return rowsOf(roomDrawers(q, k, s.since, s.until), one(q.drawerRow))
			}, keysLookup: func(q *run, k string) pager[sql.Row] {
				return once(func() ([]sql.Row, error) {
					r, err := q.r.Room(k)
					if err != nil || r == nil {
						return nil, err
					}
					return q.drawerKeyRows(*r)
				})
			}},
		},
		scan:    func(q *run) pager[sql.Row] { return rowsOf(drawersP(q), one(q.drawerRow)) },
		keyCols: map[string]bool{"id": true, "wing_id": true, "wing": true, "room_id": true, "room": true},
		keysScan: func(q *run) pager[sql.Row] {
			return flat(q, roomsP(q), func(r store.Room) pager[sql.Row] {
				return once(func() ([]sql.Row, error) { return q.drawerKeyRows(r) })
			})
		},
	},
	{
		name: "similar", doc: "The similar_to links deduplication made between an older and a newer drawer.",
		cols: []column{
			col("id", tID, "the link's id"), col("older_id", tID, "the older drawer (drawers.id)"), col("newer_id", tID, "the newer drawer (drawers.id)"),
			col("kind", tID, "the verdict: exact, normalized or near"), col("similarity", tFloat, "the estimated similarity (0..1)"),
			col("threshold", tFloat, "the near threshold in force"), col("same_hash", tBool, "the texts were identical"),
			col("same_fingerprint", tBool, "the normalised texts were identical"), col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Link, error) { l, err := q.r.Link(k); return nonNil(l), err }), one(linkRow))
			}},
			{name: "older_id", cols: []string{"older_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return drawerLinks(q, k, true) }},
			{name: "newer_id", cols: []string{"newer_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return drawerLinks(q, k, false) }},
		},
		scan: func(q *run) pager[sql.Row] {
			// Every drawer's links where it is the older end: the drawers
			// by their rooms' keys, not their records.
			ids := flat(q, roomsP(q), func(r store.Room) pager[string] {
				return once(func() ([]string, error) { return q.r.DrawerIDs(r.ID) })
			})
			return flat(q, ids, func(id string) pager[sql.Row] { return drawerLinks(q, id, true) })
		},
	},
	{
		name: "entities", doc: "The knowledge graph's entities.",
		cols: []column{
			col("id", tID, "the entity's id"), col("name", tID, "its canonical name"), col("kind", tID, "its kind (person, project, ...)"),
			col("key", tID, "its normalised key"), col("aliases", tJSON, "the other spellings it was taken under (JSON array)"),
			col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Entity, error) { e, err := q.r.Entity(k); return nonNil(e), err }), one(entityRow))
			}},
			{name: "name", cols: []string{"name"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(entitiesNamed(q, k), one(entityRow))
			}},
		},
		scan: func(q *run) pager[sql.Row] { return rowsOf(entitiesP(q), one(entityRow)) },
	},
	{
		name: "aliases", doc: "One row per alias of an entity.",
		cols: []column{col("entity_id", tID, "the entity (entities.id)"), col("entity", tID, "its canonical name"), col("alias", tID, "the alias as spelled")},
		indexes: []indexDef{{name: "entity_id", cols: []string{"entity_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
			return rowsOf(once(func() ([]*store.Entity, error) { e, err := q.r.Entity(k); return nonNil(e), err }), aliasRows)
		}}},
		scan: func(q *run) pager[sql.Row] { return rowsOf(entitiesP(q), aliasRows) },
	},
	{
		name: "mentions", doc: "The links of drawers to the entities they name.",
		cols: []column{
			col("drawer_id", tID, "the drawer (drawers.id)"), col("entity_id", tID, "the entity (entities.id)"), col("name", tID, "the name as spelled in the drawer"),
			ncol("rule", tID, "the rule that resolved it"), col("confidence", tFloat, "the confidence (0..1)"),
			ncol("extractor", tID, "who found it: manual, checkpoint or an extraction provider"), ncol("origin", tID, "where: the channel or the job"),
			col("created_at", tTime, "when it was linked (UTC)"),
		},
		indexes: []indexDef{
			{name: "entity_id", cols: []string{"entity_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(entityMentions(q, k), one(mentionRow))
			}},
			{name: "drawer_id", cols: []string{"drawer_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]store.Mention, error) { return q.r.DrawerMentions(k) }), one(func(m store.Mention) sql.Row { return mentionRow(&m) }))
			}},
		},
		scan: func(q *run) pager[sql.Row] {
			return flat(q, entitiesP(q), func(e *store.Entity) pager[sql.Row] { return rowsOf(entityMentions(q, e.ID), one(mentionRow)) })
		},
	},
	{
		name: "relationships", doc: "The knowledge graph's facts (subject predicate object), with their validity and record times.",
		cols: []column{
			col("id", tID, "the fact's id"), col("subject_id", tID, "the subject (entities.id)"), col("predicate", tID, "the predicate"),
			col("object_id", tID, "the object (entities.id)"), col("confidence", tFloat, "the confidence (0..1)"),
			col("valid_from", tTime, "start of its validity (UTC)"), ncol("valid_to", tTime, "end of its validity (UTC); NULL while open"),
			col("recorded_at", tTime, "when it was recorded (UTC)"), ncol("retracted_at", tTime, "when it was retracted (UTC)"),
			col("current", tBool, "neither retracted nor superseded"), ncol("drawer_id", tID, "the drawer it was read in"), ncol("job_id", tID, "the job that recorded it"),
			ncol("extractor", tID, "who recorded it"), ncol("superseded_by", tID, "the fact that replaced it"), ncol("reason", tText, "why it was superseded or invalidated"),
			ncol("closed_by", tID, "the evidence drawer that closed it"), col("evidence_count", tInt, "later assertions of the same fact"),
			col("evidence", tJSON, "those assertions (JSON array)"),
		},
		indexes: []indexDef{
			{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(once(func() ([]*store.Relationship, error) { r, err := q.r.Relationship(k); return nonNil(r), err }), one(factRow))
			}},
			{name: "subject_id", cols: []string{"subject_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(keep(entityFacts(q, k), func(r *store.Relationship) bool { return r.Subject == k }), one(factRow))
			}},
			{name: "object_id", cols: []string{"object_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
				return rowsOf(keep(entityFacts(q, k), func(r *store.Relationship) bool { return r.Object == k }), one(factRow))
			}},
		},
		scan: func(q *run) pager[sql.Row] { return rowsOf(factsP(q), one(factRow)) },
	},
	{
		name: "relationship_links", doc: "The lifecycle links between facts (supersedes, contradicts, ...).",
		cols: []column{
			col("id", tID, "the link's id"), col("from_id", tID, "the fact it goes from (relationships.id)"), col("to_id", tID, "the fact it goes to (relationships.id)"),
			col("kind", tID, "the link's kind"), ncol("reason", tText, "why"), ncol("drawer_id", tID, "the evidence drawer"), ncol("job_id", tID, "the job"),
			col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "from_id", cols: []string{"from_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return factLinks(q, k, true) }},
			{name: "to_id", cols: []string{"to_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return factLinks(q, k, false) }},
		},
		scan: func(q *run) pager[sql.Row] {
			return flat(q, factsP(q), func(r *store.Relationship) pager[sql.Row] { return factLinks(q, r.ID, true) })
		},
	},
	{
		name: "entity_links", doc: "The links between entities (possibly_same_as, ...).",
		cols: []column{
			col("id", tID, "the link's id"), col("from_id", tID, "the entity it goes from (entities.id)"), col("to_id", tID, "the entity it goes to (entities.id)"),
			col("kind", tID, "the link's kind"), col("created_at", tTime, "when it was made (UTC)"),
		},
		indexes: []indexDef{
			{name: "from_id", cols: []string{"from_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return entityLinks(q, k, true) }},
			{name: "to_id", cols: []string{"to_id"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] { return entityLinks(q, k, false) }},
		},
		scan: func(q *run) pager[sql.Row] {
			return flat(q, entitiesP(q), func(e *store.Entity) pager[sql.Row] { return entityLinks(q, e.ID, true) })
		},
	},
	{
		name: "jobs", doc: "The job queue, newest first (the submitted input is not shown).",
		cols: []column{
			col("id", tID, "the job's id"), col("kind", tID, "its kind (mine, embed, extract, ...)"),
			col("state", tID, "queued, running, paused, completed, failed or cancelled"), col("priority", tInt, "its priority (0..100)"),
			col("priority_name", tID, "background, low, normal, high or critical"), ncol("requested_by", tID, "the channel that queued it"),
			col("created_at", tTime, "when it was queued (UTC)"), col("updated_at", tTime, "when it last changed (UTC)"),
			ncol("started_at", tTime, "when it started (UTC)"), ncol("finished_at", tTime, "when it finished (UTC)"),
			col("progress", tInt, "items done"), ncol("progress_total", tInt, "items in all, when known"), ncol("progress_message", tText, "the progress message"),
			col("attempt", tInt, "its attempt"), col("recovery_attempts", tInt, "recoveries after a daemon stopped"),
			ncol("error", tText, "why it failed"), ncol("lease_owner", tID, "the daemon running it"), ncol("lease_expires_at", tTime, "its lease's end (UTC)"),
			col("pause_requested", tBool, "a pause was asked"), col("cancel_requested", tBool, "a cancel was asked"),
			ncol("lane", tID, "its lane"), ncol("node", tID, "its node"), col("has_checkpoint", tBool, "it keeps a checkpoint"),
			ncol("result", tJSON, "its result (JSON)"),
		},
		indexes: []indexDef{{name: "id", cols: []string{"id"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
			return rowsOf(once(func() ([]*store.Job, error) { j, err := q.r.Job(k); return nonNil(j), err }), one(jobRow))
		}}},
		scan: func(q *run) pager[sql.Row] { return rowsOf(visitPages(q, q.r.Jobs), one(jobRow)) },
	},
	{
		name: "sources", doc: "What mining keeps per source and wing: the adapter's cursor and its last run.",
		cols: []column{
			col("key", tID, "the state's key"), col("adapter", tID, "the source's adapter"), ncol("account", tID, "its account"),
			ncol("locator", tText, "what it reads (a folder, a URL, ...)"), ncol("wing_id", tID, "the wing it is mined into"),
			ncol("cursor", tJSON, "the adapter's cursor (JSON)"), col("documents", tInt, "documents filed from it"),
			ncol("last_job", tID, "the last job that mined it"), ncol("last_run", tTime, "when it was last mined (UTC)"),
		},
		indexes: []indexDef{{name: "key", cols: []string{"key"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
			return rowsOf(once(func() ([]*store.SourceState, error) { s, err := q.r.Source(k); return nonNil(s), err }), one(sourceRow))
		}}},
		scan: func(q *run) pager[sql.Row] { return rowsOf(sourcesP(q), one(sourceRow)) },
	},
	{
		name: "documents", doc: "The last filed revision of each document of each source, with its chunks' drawers.",
		cols: []column{
			col("source", tID, "the source state's key (sources.key)"), col("id", tText, "the document's id within the source"),
			ncol("wing_id", tID, "the wing its chunks were filed in"), ncol("revision", tID, "the hash of its normalised text"),
			ncol("meta", tID, "the hash of its metadata"), col("chunk_count", tInt, "how many chunks"),
			col("chunks", tJSON, "its chunks: [{drawer, hash}] (JSON)"),
		},
		indexes: []indexDef{{name: "source", cols: []string{"source"}, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
			return rowsOf(sourceDocs(q, k), one(documentRow))
		}}},
		scan: func(q *run) pager[sql.Row] {
			return flat(q, sourcesP(q), func(s *store.SourceState) pager[sql.Row] { return rowsOf(sourceDocs(q, s.Key), one(documentRow)) })
		},
	},
	{
		name: "triggers", doc: "The state the daemon keeps per trigger (whether it is enabled lives in the configuration file).",
		cols: []column{
			col("name", tID, "the trigger's name"), ncol("due", tTime, "a running schedule's next slot (UTC)"),
			col("fired", tInt, "requests that queued or joined a job"), col("coalesced", tInt, "requests joined to a running job"),
			col("failed", tInt, "failed requests"), col("deliveries", tInt, "webhook deliveries accepted"),
			ncol("last_fired", tTime, "the last request (UTC)"), ncol("last_job", tID, "the last job"),
			ncol("last_error", tText, "the last failure"), col("failures", tInt, "consecutive failures"),
			ncol("claimed", tTime, "when a daemon last claimed a signal (UTC)"),
		},
		indexes: []indexDef{{name: "name", cols: []string{"name"}, unique: true, lookup: func(q *run, k string, _ *timeSpan) pager[sql.Row] {
			return rowsOf(once(func() ([]*store.TriggerState, error) { t, err := q.r.TriggerState(k); return nonNil(t), err }), one(triggerRow))
		}}},
		scan: func(q *run) pager[sql.Row] { return rowsOf(visitPages(q, q.r.TriggerStates), one(triggerRow)) },
	},
}

// entitiesNamed reads the entities holding a canonical name, by the name
// index.
func entitiesNamed(q *run, name string) pager[*store.Entity] {
	return once(func() ([]*store.Entity, error) {
		ids, err := q.r.EntityIDs(store.EntityByName, name)
		if err != nil {
			return nil, err
		}
		var out []*store.Entity
		for _, id := range ids {
			e, err := q.r.Entity(id)
			if err != nil {
				return nil, err
			}
			if e != nil && e.Name == name {
				out = append(out, e)
			}
		}
		return out, nil
	})
}

// drawerLinks is a drawer's similar_to links where it is the older end
// (older) or the newer.
func drawerLinks(q *run, id string, older bool) pager[sql.Row] {
	return once(func() ([]sql.Row, error) {
		ls, err := q.r.Links(id)
		var out []sql.Row
		for i := range ls {
			if older && ls[i].Older == id || !older && ls[i].Newer == id {
				out = append(out, linkRow(&ls[i]))
			}
		}
		return out, err
	})
}

// factLinks is a fact's lifecycle links from it (from) or to it.
func factLinks(q *run, id string, from bool) pager[sql.Row] {
	return once(func() ([]sql.Row, error) {
		ls, err := q.r.RelationshipLinks(id)
		var out []sql.Row
		for _, l := range ls {
			if from && l.From == id || !from && l.To == id {
				out = append(out, factLinkRow(l))
			}
		}
		return out, err
	})
}

// entityLinks is an entity's links from it (from) or to it.
func entityLinks(q *run, id string, from bool) pager[sql.Row] {
	return once(func() ([]sql.Row, error) {
		ls, err := q.r.EntityLinks(id)
		var out []sql.Row
		for _, l := range ls {
			if from && l.From == id || !from && l.To == id {
				out = append(out, entityLinkRow(l))
			}
		}
		return out, err
	})
}
