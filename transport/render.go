package transport

import (
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// The answers of REST and MCP as package api shapes them, made from the
// services' values in one place. A job's answer has no input: it may hold
// memory content, and is the job's own business.

func apiJob(j *store.Job) *api.Job {
	if j == nil {
		return nil
	}
	return &api.Job{ID: j.ID, Kind: j.Kind, Status: j.Status, Priority: j.Priority.String(), RequestedBy: j.RequestedBy,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		Progress: api.Progress{Current: j.Progress.Current, Total: j.Progress.Total, Message: j.Progress.Message},
		Attempt:  j.Attempt, RecoveryAttempts: j.RecoveryAttempts, Checkpoint: j.Checkpoint, Result: j.Result,
		Error: j.Error, LeaseOwner: j.LeaseOwner, LeaseExpiresAt: j.LeaseExpiresAt,
		PauseRequested: j.PauseRequested, CancelRequested: j.CancelRequested}
}

func apiJobs(jobs []store.Job) api.JobList {
	out := api.JobList{Jobs: make([]api.Job, len(jobs))}
	for i := range jobs {
		out.Jobs[i] = *apiJob(&jobs[i])
	}
	return out
}

func apiRoom(r services.RoomInfo) api.Room {
	return api.Room{ID: r.ID, WingID: r.WingID, Wing: r.WingName, Name: r.Name, Description: r.Description,
		CreatedAt: r.CreatedAt, Drawers: r.DrawerCount, Stored: r.Stored}
}

func apiRooms(rooms []services.RoomInfo) []api.Room {
	out := make([]api.Room, len(rooms))
	for i, r := range rooms {
		out[i] = apiRoom(r)
	}
	return out
}

// apiWing is a wing with its counts, and its rooms when the service gave
// them.
func apiWing(w services.WingInfo) api.Wing {
	out := api.Wing{ID: w.ID, Name: w.Name, Description: w.Description, CreatedAt: w.CreatedAt,
		RoomCount: w.RoomCount, Drawers: w.DrawerCount}
	if len(w.Rooms) > 0 {
		out.Rooms = apiRooms(w.Rooms)
	}
	return out
}

func apiWings(wings []services.WingInfo) api.WingList {
	out := api.WingList{Wings: make([]api.Wing, len(wings))}
	for i, w := range wings {
		out.Wings[i] = apiWing(w)
	}
	return out
}

func apiRemoved(n store.Removed) api.RemovedAnswer {
	return api.RemovedAnswer{Removed: api.Removed{Wings: n.Wings, Rooms: n.Rooms, Drawers: n.Drawers}}
}

func apiDrawer(d *store.Drawer) api.Drawer {
	return api.Drawer{ID: d.ID, WingID: d.WingID, RoomID: d.RoomID, Name: d.Name, Content: d.Content, Tags: d.Tags,
		Source:     api.Source{Kind: d.Source.Kind, URI: d.Source.URI, Agent: d.Source.Agent},
		Provenance: api.Provenance{RequestedBy: d.Provenance.RequestedBy, JobID: d.Provenance.JobID},
		ValidFrom:  d.ValidFrom, ValidTo: d.ValidTo, CreatedAt: d.CreatedAt, SupersededBy: d.SupersededBy,
		Supersedes: d.Supersedes, Diary: d.Diary}
}

func apiDrawerPtr(d *store.Drawer) *api.Drawer {
	if d == nil {
		return nil
	}
	out := apiDrawer(d)
	return &out
}

func apiDrawerList(ds []store.Drawer) []api.Drawer {
	out := make([]api.Drawer, len(ds))
	for i := range ds {
		out[i] = apiDrawer(&ds[i])
	}
	return out
}

func apiSimilar(v store.SimilarView) api.Similar {
	out := api.Similar{Drawer: v.Drawer, Side: v.Side, Kind: v.Kind, Similarity: v.Similarity, CreatedAt: v.CreatedAt, LinkID: v.LinkID}
	if sig, ok := v.Signals.(dedup.Signals); ok {
		out.Signals.SameHash, out.Signals.SameFingerprint = sig.SameHash, sig.SameFingerprint
		out.Signals.Similarity, out.Signals.Threshold = sig.Similarity, sig.Threshold
	}
	return out
}

func apiSimilarList(vs []store.SimilarView) []api.Similar {
	out := make([]api.Similar, len(vs))
	for i, v := range vs {
		out[i] = apiSimilar(v)
	}
	return out
}

func apiPreviews(ps []services.Preview) api.DrawerList {
	out := api.DrawerList{Drawers: make([]api.Preview, len(ps))}
	for i, p := range ps {
		out.Drawers[i] = api.Preview{ID: p.ID, Name: p.Name, Preview: p.Preview, Bytes: p.Bytes, Tags: p.Tags,
			Source:    api.Source{Kind: p.Source.Kind, URI: p.Source.URI, Agent: p.Source.Agent},
			ValidFrom: p.ValidFrom, ValidTo: p.ValidTo, CreatedAt: p.CreatedAt, SupersededBy: p.SupersededBy}
	}
	return out
}

// apiWrite is a write's answer: {created, drawer, similar}, the links it
// made read from the new drawer's side.
func apiWrite(res *store.WriteResult) api.WriteResult {
	similar := make([]api.Similar, 0, len(res.Similar))
	for _, l := range res.Similar {
		similar = append(similar, apiSimilar(store.SimilarView{Drawer: l.Older, Side: "older", Kind: string(l.Kind),
			Similarity: l.Signals.Similarity, Signals: l.Signals, CreatedAt: store.LinkTime(l.CreatedAt), LinkID: l.ID}))
	}
	return api.WriteResult{Created: res.Created, Drawer: apiDrawer(res.Drawer), Similar: similar}
}

func apiHistory(d *store.Drawer, versions []store.Drawer) api.History {
	return api.History{Drawer: apiDrawer(d), Versions: apiDrawerList(versions)}
}

func apiSearch(res *search.SearchResult) *api.SearchResult {
	if res == nil {
		return nil
	}
	out := &api.SearchResult{Query: res.Query, Ranking: res.Ranking, Hits: make([]api.Hit, len(res.Hits)), Warning: res.Warning}
	for i := range res.Hits {
		h := &res.Hits[i]
		out.Hits[i] = api.Hit{Drawer: apiDrawer(&h.Drawer), Wing: h.WingName, Room: h.RoomName, Document: h.Document, Chunk: h.Chunk,
			Score: h.Score, Signals: h.Signals, Via: h.Via, Turn: h.Turn}
	}
	return out
}

func apiWakeUp(w *services.WakeUp) *api.WakeUp {
	if w == nil {
		return nil
	}
	items := make([]api.WakeUpItem, len(w.Items))
	for i, it := range w.Items {
		items[i] = api.WakeUpItem{Drawer: apiDrawer(&it.Drawer), Unattributed: it.Unattributed}
	}
	return &api.WakeUp{AgentIdentity: w.AgentIdentity, Wing: w.Wing, Diary: apiDrawerPtr(w.Diary), Items: items,
		LastSession: w.LastSession, Bytes: w.Bytes, Skipped: w.Skipped}
}

func apiFiled(since time.Time, step time.Duration, counts []int) api.Filed {
	out := api.Filed{Since: since.UTC(), StepSecs: int64(step / time.Second), Counts: counts}
	for _, n := range counts {
		out.Total += n
	}
	return out
}
