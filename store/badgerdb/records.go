package badgerdb

import (
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// The records below are what this backend stores: its own types, apart
// from the store's (which the service works with) and from package api's
// (which clients read), so that changing either never changes a byte on
// disk, and the reverse. Each is written as a version byte (1) and JSON
// (encode). Their field names and order are the encoding of schema v6
// and must not change: TestRecordsKeepTheirEncoding pins their bytes.
// A different encoding is a new version byte read beside the old one, or
// a numbered data step (store/steps.go) that rewrites old palaces.

type wingRecord struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func wingRec(w *store.Wing) wingRecord {
	return wingRecord{ID: w.ID, Name: w.Name, Description: w.Description, CreatedAt: w.CreatedAt}
}

func (r *wingRecord) wing() *store.Wing {
	return &store.Wing{ID: r.ID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt}
}

type roomRecord struct {
	ID          string    `json:"id"`
	WingID      string    `json:"wing_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func roomRec(r *store.Room) roomRecord {
	return roomRecord{ID: r.ID, WingID: r.WingID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt}
}

func (r *roomRecord) room() *store.Room {
	return &store.Room{ID: r.ID, WingID: r.WingID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt}
}

type drawerRecord struct {
	ID         string             `json:"id"`
	WingID     string             `json:"wing_id"`
	RoomID     string             `json:"room_id"`
	Name       string             `json:"name,omitempty"`
	Content    string             `json:"content"`
	Tags       []string           `json:"tags"`
	Source     drawerSourceRecord `json:"source"`
	Provenance struct {
		RequestedBy string `json:"requested_by"`
		JobID       string `json:"job_id,omitempty"`
	} `json:"provenance"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Supersedes   string     `json:"supersedes,omitempty"`
	Diary        bool       `json:"diary,omitempty"`
}

type drawerSourceRecord struct {
	Kind   string          `json:"kind"`
	URI    string          `json:"uri,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Origin json.RawMessage `json:"origin,omitempty"`
}

func drawerRec(d *store.Drawer) *drawerRecord {
	r := &drawerRecord{ID: d.ID, WingID: d.WingID, RoomID: d.RoomID, Name: d.Name, Content: d.Content, Tags: d.Tags,
		Source:    drawerSourceRecord{Kind: d.Source.Kind, URI: d.Source.URI, Agent: d.Source.Agent, Origin: d.Source.Origin},
		ValidFrom: d.ValidFrom, ValidTo: d.ValidTo, CreatedAt: d.CreatedAt, SupersededBy: d.SupersededBy,
		Supersedes: d.Supersedes, Diary: d.Diary}
	r.Provenance.RequestedBy, r.Provenance.JobID = d.Provenance.RequestedBy, d.Provenance.JobID
	return r
}

func (r *drawerRecord) drawer() *store.Drawer {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	return &store.Drawer{ID: r.ID, WingID: r.WingID, RoomID: r.RoomID, Name: r.Name, Content: r.Content, Tags: tags,
		Source:     store.Source{Kind: r.Source.Kind, URI: r.Source.URI, Agent: r.Source.Agent, Origin: r.Source.Origin},
		Provenance: store.Provenance{RequestedBy: r.Provenance.RequestedBy, JobID: r.Provenance.JobID},
		ValidFrom:  r.ValidFrom, ValidTo: r.ValidTo, CreatedAt: r.CreatedAt, SupersededBy: r.SupersededBy,
		Supersedes: r.Supersedes, Diary: r.Diary}
}

type dedupRecord struct {
	DrawerID    string `json:"drawer_id"`
	Scope       string `json:"scope"`
	Hash        string `json:"hash"`
	Fingerprint string `json:"fingerprint"`
	NormLen     int    `json:"norm_len"`
	Distinct    int    `json:"distinct,omitempty"`
}

func dedupRec(r *store.DedupRecord) dedupRecord {
	return dedupRecord{DrawerID: r.DrawerID, Scope: r.Scope, Hash: r.Hash, Fingerprint: r.Fingerprint, NormLen: r.NormLen, Distinct: r.Distinct}
}

// record is the stored part of the dedup record: its sketch and
// normalised text are kept apart (ds/) and its bands in the near index.
func (r *dedupRecord) record() *store.DedupRecord {
	return &store.DedupRecord{DrawerID: r.DrawerID, Scope: r.Scope, Hash: r.Hash, Fingerprint: r.Fingerprint, NormLen: r.NormLen, Distinct: r.Distinct}
}

type linkRecord struct {
	ID      string `json:"id"`
	Older   string `json:"older"`
	Newer   string `json:"newer"`
	Kind    string `json:"kind"`
	Signals struct {
		SameHash        bool    `json:"same_hash"`
		SameFingerprint bool    `json:"same_fingerprint"`
		Similarity      float64 `json:"similarity"`
		Threshold       float64 `json:"threshold"`
	} `json:"signals"`
	CreatedAt time.Time `json:"created_at"`
}

func linkRec(l *store.Link) *linkRecord {
	r := &linkRecord{ID: l.ID, Older: l.Older, Newer: l.Newer, Kind: string(l.Kind), CreatedAt: l.CreatedAt}
	r.Signals.SameHash, r.Signals.SameFingerprint = l.Signals.SameHash, l.Signals.SameFingerprint
	r.Signals.Similarity, r.Signals.Threshold = l.Signals.Similarity, l.Signals.Threshold
	return r
}

func (r *linkRecord) link() *store.Link {
	return &store.Link{ID: r.ID, Older: r.Older, Newer: r.Newer, Kind: dedup.Verdict(r.Kind), CreatedAt: r.CreatedAt,
		Signals: dedup.Signals{SameHash: r.Signals.SameHash, SameFingerprint: r.Signals.SameFingerprint,
			Similarity: r.Signals.Similarity, Threshold: r.Signals.Threshold}}
}

type changeRecord struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Action string    `json:"action"`
	ID     string    `json:"id"`
}

func (r *changeRecord) change() store.Change {
	return store.Change{Seq: r.Seq, At: r.At, Kind: r.Kind, Action: r.Action, ID: r.ID}
}

// jobRecord is a job without its input (kept apart, ji/), its priority as
// a number, last. It is this backend's own format: store/postgres keeps
// its own (jobRow), so that either can change without migrating the
// other's stores.
type jobRecord struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	RequestedBy string     `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Progress    struct {
		Current int64  `json:"current"`
		Total   *int64 `json:"total,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"progress"`
	Attempt          int             `json:"attempt"`
	RecoveryAttempts int             `json:"recovery_attempts"`
	Checkpoint       json.RawMessage `json:"checkpoint"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	LeaseOwner       string          `json:"lease_owner,omitempty"`
	LeaseExpiresAt   *time.Time      `json:"lease_expires_at,omitempty"`
	PauseRequested   bool            `json:"pause_requested"`
	CancelRequested  bool            `json:"cancel_requested"`
	Priority         int             `json:"priority"`
	Lane             string          `json:"lane,omitempty"`
	Node             string          `json:"node,omitempty"`
}

func jobRec(j *store.Job) *jobRecord {
	r := &jobRecord{ID: j.ID, Kind: j.Kind, Status: j.Status, RequestedBy: j.RequestedBy, CreatedAt: j.CreatedAt,
		UpdatedAt: j.UpdatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Attempt: j.Attempt,
		RecoveryAttempts: j.RecoveryAttempts, Checkpoint: j.Checkpoint, Result: j.Result, Error: j.Error,
		LeaseOwner: j.LeaseOwner, LeaseExpiresAt: j.LeaseExpiresAt, PauseRequested: j.PauseRequested,
		CancelRequested: j.CancelRequested, Priority: int(j.Priority), Lane: j.Lane, Node: j.Node}
	r.Progress.Current, r.Progress.Total, r.Progress.Message = j.Progress.Current, j.Progress.Total, j.Progress.Message
	return r
}

func (r *jobRecord) job() *store.Job {
	return &store.Job{ID: r.ID, Kind: r.Kind, Status: r.Status, Priority: store.Priority(r.Priority),
		RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Progress: store.Progress{Current: r.Progress.Current, Total: r.Progress.Total, Message: r.Progress.Message},
		Attempt: r.Attempt, RecoveryAttempts: r.RecoveryAttempts, Checkpoint: r.Checkpoint, Result: r.Result,
		Error: r.Error, LeaseOwner: r.LeaseOwner, LeaseExpiresAt: r.LeaseExpiresAt,
		PauseRequested: r.PauseRequested, CancelRequested: r.CancelRequested, Lane: r.Lane, Node: r.Node}
}

type authRecord struct {
	Digest    string    `json:"digest"`
	Algorithm string    `json:"algorithm"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

// embeddingMeta is a stored vector's identity (the vector follows it as
// float32s).
type embeddingMeta struct {
	DrawerID  string    `json:"drawer_id"`
	Profile   string    `json:"profile"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Dimension int       `json:"dimension"`
	Pipeline  string    `json:"pipeline"`
	CreatedAt time.Time `json:"created_at"`
}

// sourceRecord is a source's state in a wing (src/<key>); a record
// written before states were per wing has no wing_id.
type sourceRecord struct {
	Key       string          `json:"key"`
	Adapter   string          `json:"adapter"`
	Account   string          `json:"account,omitempty"`
	Locator   string          `json:"locator"`
	WingID    string          `json:"wing_id,omitempty"`
	Cursor    json.RawMessage `json:"cursor,omitempty"`
	Documents int             `json:"documents,omitempty"`
	LastJob   string          `json:"last_job,omitempty"`
	LastRun   time.Time       `json:"last_run"`
}

func sourceRec(s *store.SourceState) *sourceRecord {
	return &sourceRecord{Key: s.Key, Adapter: s.Identity.Adapter, Account: s.Identity.Account, Locator: s.Identity.Locator,
		WingID: s.WingID, Cursor: s.Cursor, Documents: s.Documents, LastJob: s.LastJob, LastRun: s.LastRun}
}

func (r *sourceRecord) state() *store.SourceState {
	return &store.SourceState{Key: r.Key, Identity: store.SourceIdentity{Adapter: r.Adapter, Account: r.Account, Locator: r.Locator},
		WingID: r.WingID, Cursor: r.Cursor, Documents: r.Documents, LastJob: r.LastJob, LastRun: r.LastRun}
}

// chunkOwnerRecord is the state and document a drawer was filed as a
// chunk of (sdo/<drawer>).
type chunkOwnerRecord struct {
	Source string `json:"source"`
	Doc    string `json:"doc"`
}

// documentRecord is a document's filed revision (sd/<source>/<document>).
type documentRecord struct {
	Source   string `json:"source"`
	ID       string `json:"id"`
	WingID   string `json:"wing_id"`
	Revision string `json:"revision"`
	Meta     string `json:"meta"`
	Chunks   []struct {
		Drawer string `json:"drawer"`
		Hash   string `json:"hash"`
	} `json:"chunks"`
}

func documentRec(d *store.DocumentState) *documentRecord {
	r := &documentRecord{Source: d.Source, ID: d.ID, WingID: d.WingID, Revision: d.Revision, Meta: d.Meta}
	r.Chunks = make([]struct {
		Drawer string `json:"drawer"`
		Hash   string `json:"hash"`
	}, len(d.Chunks))
	for i, c := range d.Chunks {
		r.Chunks[i].Drawer, r.Chunks[i].Hash = c.Drawer, c.Hash
	}
	return r
}

func (r *documentRecord) state() *store.DocumentState {
	d := &store.DocumentState{Source: r.Source, ID: r.ID, WingID: r.WingID, Revision: r.Revision, Meta: r.Meta,
		Chunks: make([]store.ChunkState, len(r.Chunks))}
	for i, c := range r.Chunks {
		d.Chunks[i] = store.ChunkState{Drawer: c.Drawer, Hash: c.Hash}
	}
	return d
}

// triggerRecord is a trigger's state (tg/<name>).
type triggerRecord struct {
	Name       string     `json:"name"`
	Due        *time.Time `json:"due,omitempty"`
	Fired      int64      `json:"fired"`
	Coalesced  int64      `json:"coalesced"`
	Failed     int64      `json:"failed"`
	Deliveries int64      `json:"deliveries"`
	LastFired  *time.Time `json:"last_fired,omitempty"`
	LastJob    string     `json:"last_job,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	Failures   int        `json:"failures,omitempty"`
	Claimed    *time.Time `json:"claimed,omitempty"`
}

func triggerRec(s *store.TriggerState) *triggerRecord {
	return &triggerRecord{Name: s.Name, Due: s.Due, Fired: s.Fired, Coalesced: s.Coalesced, Failed: s.Failed, Deliveries: s.Deliveries,
		LastFired: s.LastFired, LastJob: s.LastJob, LastError: s.LastError, Failures: s.Failures, Claimed: s.Claimed}
}

func (r *triggerRecord) state() *store.TriggerState {
	return &store.TriggerState{Name: r.Name, Due: r.Due, Fired: r.Fired, Coalesced: r.Coalesced, Failed: r.Failed, Deliveries: r.Deliveries,
		LastFired: r.LastFired, LastJob: r.LastJob, LastError: r.LastError, Failures: r.Failures, Claimed: r.Claimed}
}

// deliveryRecord is an accepted webhook delivery (tgd/<trigger>/<id>).
type deliveryRecord struct {
	Trigger    string    `json:"trigger"`
	ID         string    `json:"id"`
	AcceptedAt time.Time `json:"accepted_at"`
	Job        string    `json:"job,omitempty"`
}

func deliveryRec(d *store.Delivery) *deliveryRecord {
	return &deliveryRecord{Trigger: d.Trigger, ID: d.ID, AcceptedAt: d.AcceptedAt, Job: d.Job}
}

func (r *deliveryRecord) delivery() *store.Delivery {
	return &store.Delivery{Trigger: r.Trigger, ID: r.ID, AcceptedAt: r.AcceptedAt, Job: r.Job}
}

// entityRecord is an entity (en/<id>).
type entityRecord struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Key       string    `json:"key"`
	Aliases   []string  `json:"aliases,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func entityRec(e *store.Entity) *entityRecord {
	return &entityRecord{ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key, Aliases: e.Aliases, CreatedAt: e.CreatedAt}
}

func (r *entityRecord) entity() *store.Entity {
	return &store.Entity{ID: r.ID, Name: r.Name, Kind: r.Kind, Key: r.Key, Aliases: r.Aliases, CreatedAt: r.CreatedAt}
}

// entityLinkRecord is a link between entities (enl/<from>\x00<id> and
// enl/<to>\x00<id>).
type entityLinkRecord struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
}

// mentionRecord is a drawer's mention of an entity (mde/<drawer>\x00<entity>,
// mne/<entity>\x00<drawer>).
type mentionRecord struct {
	Drawer     string    `json:"drawer"`
	Entity     string    `json:"entity"`
	Name       string    `json:"name"`
	Rule       string    `json:"rule"`
	Confidence float64   `json:"confidence"`
	Extractor  string    `json:"extractor"`
	Origin     string    `json:"origin,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

func mentionRec(m *store.Mention) *mentionRecord {
	return &mentionRecord{Drawer: m.Drawer, Entity: m.Entity, Name: m.Name, Rule: m.Rule, Confidence: m.Confidence,
		Extractor: m.Extractor, Origin: m.Origin, CreatedAt: m.CreatedAt}
}

func (r *mentionRecord) mention() *store.Mention {
	return &store.Mention{Drawer: r.Drawer, Entity: r.Entity, Name: r.Name, Rule: r.Rule, Confidence: r.Confidence,
		Extractor: r.Extractor, Origin: r.Origin, CreatedAt: r.CreatedAt}
}

// relationshipRecord is a fact (rel/<id>; indexed under rle/<entity>\x00<id>
// for its subject and its object).
type relationshipRecord struct {
	ID           string     `json:"id"`
	Subject      string     `json:"subject"`
	Predicate    string     `json:"predicate"`
	Object       string     `json:"object"`
	Confidence   float64    `json:"confidence"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	RecordedAt   time.Time  `json:"recorded_at"`
	RetractedAt  *time.Time `json:"retracted_at,omitempty"`
	Drawer       string     `json:"drawer,omitempty"`
	Job          string     `json:"job,omitempty"`
	Extractor    string     `json:"extractor,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	ClosedBy     string     `json:"closed_by,omitempty"`
	// Evidence is the later assertions of the same fact.
	Evidence []evidenceRecord `json:"evidence,omitempty"`
}

// evidenceRecord is one more assertion of a fact.
type evidenceRecord struct {
	ID         string    `json:"id"`
	Drawer     string    `json:"drawer,omitempty"`
	Job        string    `json:"job,omitempty"`
	Extractor  string    `json:"extractor,omitempty"`
	Confidence float64   `json:"confidence"`
	RecordedAt time.Time `json:"recorded_at"`
}

func relationshipRec(r *store.Relationship) *relationshipRecord {
	rec := &relationshipRecord{ID: r.ID, Subject: r.Subject, Predicate: r.Predicate, Object: r.Object, Confidence: r.Confidence,
		ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, RecordedAt: r.RecordedAt, RetractedAt: r.RetractedAt, Drawer: r.Drawer,
		Job: r.Job, Extractor: r.Extractor, SupersededBy: r.SupersededBy, Reason: r.Reason, ClosedBy: r.ClosedBy}
	for _, e := range r.Evidence {
		rec.Evidence = append(rec.Evidence, evidenceRecord(e))
	}
	return rec
}

func (r *relationshipRecord) relationship() *store.Relationship {
	rel := &store.Relationship{ID: r.ID, Subject: r.Subject, Predicate: r.Predicate, Object: r.Object, Confidence: r.Confidence,
		ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, RecordedAt: r.RecordedAt, RetractedAt: r.RetractedAt, Drawer: r.Drawer,
		Job: r.Job, Extractor: r.Extractor, SupersededBy: r.SupersededBy, Reason: r.Reason, ClosedBy: r.ClosedBy}
	for _, e := range r.Evidence {
		rel.Evidence = append(rel.Evidence, store.Evidence(e))
	}
	return rel
}

// relationshipLinkRecord is a lifecycle link (rll/<fact>\x00<link>, under
// both facts).
type relationshipLinkRecord struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Kind      string    `json:"kind"`
	Reason    string    `json:"reason"`
	Drawer    string    `json:"drawer,omitempty"`
	Job       string    `json:"job,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}
