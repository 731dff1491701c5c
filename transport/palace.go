package transport

import (
	"net/http"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
)

// Default and maximum list sizes.
const (
	DrawersLimit    = 50
	DrawersMaxLimit = 200
	DiaryLimit      = 20
	DiaryMaxLimit   = 200
)

func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func (s *Server) listWings(w http.ResponseWriter, r *http.Request) error {
	wings, err := s.Palace.Wings(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiWings(wings))
}

func (s *Server) createWing(w http.ResponseWriter, r *http.Request) error {
	var b api.NewPlace
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	wing, created, err := s.Palace.CreateWing(r.Context(), b.Name, b.Description)
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(created), api.WingCreated{Created: created, Wing: apiWing(wing)})
}

func (s *Server) getWing(w http.ResponseWriter, r *http.Request) error {
	ref, err := param(r, "wing")
	if err != nil {
		return err
	}
	wing, err := s.Palace.Wing(r.Context(), ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiWing(wing))
}

func (s *Server) deleteWing(w http.ResponseWriter, r *http.Request) error {
	ref, err := param(r, "wing")
	if err != nil {
		return err
	}
	n, err := s.Palace.DeleteWing(r.Context(), ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiRemoved(n))
}

func (s *Server) listRooms(w http.ResponseWriter, r *http.Request) error {
	ref, err := param(r, "wing")
	if err != nil {
		return err
	}
	rooms, err := s.Palace.Rooms(r.Context(), ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.RoomList{Rooms: apiRooms(rooms)})
}

func (s *Server) createRoom(w http.ResponseWriter, r *http.Request) error {
	ref, err := param(r, "wing")
	if err != nil {
		return err
	}
	var b api.NewPlace
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	room, created, err := s.Palace.CreateRoom(r.Context(), ref, b.Name, b.Description)
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(created), api.RoomCreated{Created: created, Room: apiRoom(room)})
}

func roomParams(r *http.Request) (wing, room string, err error) {
	if wing, err = param(r, "wing"); err != nil {
		return
	}
	room, err = param(r, "room")
	return
}

func (s *Server) getRoom(w http.ResponseWriter, r *http.Request) error {
	wing, room, err := roomParams(r)
	if err != nil {
		return err
	}
	info, err := s.Palace.Room(r.Context(), wing, room)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiRoom(info))
}

func (s *Server) deleteRoom(w http.ResponseWriter, r *http.Request) error {
	wing, room, err := roomParams(r)
	if err != nil {
		return err
	}
	n, err := s.Palace.DeleteRoom(r.Context(), wing, room)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiRemoved(n))
}

func (s *Server) listDrawers(w http.ResponseWriter, r *http.Request) error {
	wing, room, err := roomParams(r)
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, "limit", DrawersLimit, DrawersMaxLimit)
	if err != nil {
		return err
	}
	hist, err := queryBool(r, "include_historical")
	if err != nil {
		return err
	}
	list, next, err := s.Palace.Drawers(r.Context(), wing, room, limit, hist, r.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	out := apiPreviews(list)
	out.NextCursor = next
	return writeJSON(w, http.StatusOK, out)
}

// writeResult renders a drawer write: 201 stored, 200 existing.
func writeResult(w http.ResponseWriter, res *store.WriteResult) error {
	return writeJSON(w, createdStatus(res.Created), apiWrite(res))
}

func (s *Server) createDrawer(w http.ResponseWriter, r *http.Request) error {
	wing, room, err := roomParams(r)
	if err != nil {
		return err
	}
	var b api.NewDrawer
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	by, err := channel(b.RequestedBy)
	if err != nil {
		return err
	}
	in := store.NewDrawer{Wing: wing, Room: room, Name: b.Name, Content: b.Content, Tags: b.Tags,
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: by}}
	if b.Name != "" {
		in.Policy = store.ExactStoredLinked
	}
	if b.Source != nil {
		in.Source = store.Source{Kind: b.Source.Kind, URI: b.Source.URI, Agent: b.Source.Agent}
		if in.Source.Kind == "" {
			in.Source.Kind = store.KindManual
		}
	}
	if b.ValidFrom != "" {
		if in.ValidFrom, err = ParseInstant("valid_from", b.ValidFrom); err != nil {
			return err
		}
	}
	res, err := s.Palace.CreateDrawer(r.Context(), in)
	if err != nil {
		return err
	}
	return writeResult(w, res)
}

func drawerParams(r *http.Request) (wing, room, ref string, err error) {
	if wing, room, err = roomParams(r); err != nil {
		return
	}
	ref, err = param(r, "*")
	return
}

func (s *Server) getDrawer(w http.ResponseWriter, r *http.Request) error {
	wing, room, ref, err := drawerParams(r)
	if err != nil {
		return err
	}
	d, err := s.Palace.Drawer(r.Context(), wing, room, ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiDrawer(d))
}

func (s *Server) deleteDrawer(w http.ResponseWriter, r *http.Request) error {
	wing, room, ref, err := drawerParams(r)
	if err != nil {
		return err
	}
	n, err := s.Palace.DeleteDrawer(r.Context(), wing, room, ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiRemoved(n))
}

func (s *Server) createNote(w http.ResponseWriter, r *http.Request) error {
	var b api.NewNote
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	if b.Wing == "" {
		return fault.Invalid("wing", "is required")
	}
	if b.Room == "" {
		return fault.Invalid("room", "is required")
	}
	by, err := channel(b.RequestedBy)
	if err != nil {
		return err
	}
	res, err := s.Palace.CreateDrawer(r.Context(), store.NewDrawer{Wing: b.Wing, Room: b.Room, Content: b.Content,
		Source: store.Source{Kind: store.KindNote, URI: b.URI}, Provenance: store.Provenance{RequestedBy: by},
		Policy: store.ExactReturnsExisting})
	if err != nil {
		return err
	}
	return writeResult(w, res)
}

func (s *Server) writeDiary(w http.ResponseWriter, r *http.Request) error {
	var b api.DiaryWrite
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	by, err := channel(b.RequestedBy)
	if err != nil {
		return err
	}
	res, err := s.Palace.DiaryWrite(r.Context(), b.AgentIdentity, b.Wing, b.Content, by)
	if err != nil {
		return err
	}
	return writeResult(w, res)
}

func (s *Server) readDiary(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryLimit(r, "limit", DiaryLimit, DiaryMaxLimit)
	if err != nil {
		return err
	}
	entries, err := s.Palace.DiaryRead(r.Context(), q.Get("agent_identity"), q.Get("wing"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.DiaryEntries{Entries: apiDrawerList(entries)})
}

func (s *Server) supersede(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	var b api.SupersedeRequest
	if err := decodeBody(r, &b, true); err != nil {
		return err
	}
	by, err := channel(b.RequestedBy)
	if err != nil {
		return err
	}
	res, err := s.Palace.Supersede(r.Context(), store.Supersession{DrawerID: id, Content: b.Content, Tags: b.Tags, RequestedBy: by})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Supersede{Superseded: apiDrawer(res.Superseded), Replacement: apiDrawerPtr(res.Replacement)})
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	d, versions, err := s.Palace.History(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiHistory(d, versions))
}

// filed is GET /api/stats/filed: buckets (1 to 366, default 14) spans of
// step_secs (60 to 366 days, default a day) from since (RFC 3339 or a
// date; default the start, in UTC, of the span buckets-1 spans before the
// current one), each with the drawers filed in it.
func (s *Server) filed(w http.ResponseWriter, r *http.Request) error {
	buckets, err := queryLimit(r, "buckets", 14, services.MaxFiledBuckets)
	if err != nil {
		return err
	}
	stepSecs, err := queryLimit(r, "step_secs", 86400, int(services.MaxFiledStep/time.Second))
	if err != nil {
		return err
	}
	step := time.Duration(stepSecs) * time.Second
	since, err := instantParam(r, "since")
	if err != nil {
		return err
	}
	if since == nil {
		t := time.Now().UTC().Truncate(step).Add(-step * time.Duration(buckets-1))
		since = &t
	}
	counts, err := s.Palace.Filed(r.Context(), *since, step, buckets)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiFiled(*since, step, counts))
}

func (s *Server) duplicates(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	d, similar, err := s.Palace.Duplicates(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Duplicates{Drawer: apiDrawer(d), Similar: apiSimilarList(similar)})
}

func (s *Server) deleteDuplicate(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	link, err := param(r, "link")
	if err != nil {
		return err
	}
	if err := s.Palace.DeleteDuplicate(r.Context(), id, link); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.LinkRemoved{Removed: link})
}
