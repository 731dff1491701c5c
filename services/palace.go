package services

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Palace is the service layer over the palace: reads run in read
// transactions, writes go to the writer.
type Palace struct {
	DB     store.DB
	Sys    *actors.System
	Dedup  store.Dedup
	Locked func(ctx context.Context, wingID, roomID string) error // palace::busy guard; nil: never busy

	// winged caches WingCounts for the change-log sequence it was read
	// at: every change to a count is logged, and counting a wing reads
	// each of its drawer keys.
	countsMu sync.Mutex
	winged   *wingsAt
}

type wingsAt struct {
	seq   uint64
	wings []api.WingCount
}

// DiaryRoom is the room of a wing that holds diary entries
// (store.DiaryRoom).
const DiaryRoom = store.DiaryRoom

// WingInfo is a wing with its counts, and its rooms when asked for one.
type WingInfo struct {
	store.Wing
	RoomCount   int
	DrawerCount int
	Rooms       []RoomInfo
}

// RoomInfo is a room with its drawer count.
type RoomInfo struct {
	store.Room
	WingName    string
	DrawerCount int
	Stored      int
}

func (p *Palace) view(ctx context.Context, fn func(store.Reader) error) error {
	return p.DB.View(ctx, fn)
}

func write[T any](ctx context.Context, p *Palace, fn func(store.Tx) (T, error)) (T, error) {
	v, err := p.Sys.Write(ctx, func(tx store.Tx) (any, error) { return fn(tx) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

func roomInfo(r store.Reader, w *store.Wing, rm *store.Room) (RoomInfo, error) {
	cur, stored, err := r.CountDrawers(rm.ID)
	return RoomInfo{Room: *rm, WingName: w.Name, DrawerCount: cur, Stored: stored}, err
}

func wingInfo(r store.Reader, w *store.Wing, withRooms bool) (WingInfo, error) {
	rooms, err := r.Rooms(w.ID)
	if err != nil {
		return WingInfo{}, err
	}
	info := WingInfo{Wing: *w, RoomCount: len(rooms)}
	for i := range rooms {
		ri, err := roomInfo(r, w, &rooms[i])
		if err != nil {
			return WingInfo{}, err
		}
		info.DrawerCount += ri.DrawerCount
		if withRooms {
			info.Rooms = append(info.Rooms, ri)
		}
	}
	if withRooms && info.Rooms == nil {
		info.Rooms = []RoomInfo{}
	}
	return info, nil
}

// Wings lists every wing with counts.
func (p *Palace) Wings(ctx context.Context) ([]WingInfo, error) {
	out := []WingInfo{}
	err := p.view(ctx, func(r store.Reader) error {
		wings, err := r.Wings()
		if err != nil {
			return err
		}
		for i := range wings {
			info, err := wingInfo(r, &wings[i], false)
			if err != nil {
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}

// Wing is one wing with totals and rooms.
func (p *Palace) Wing(ctx context.Context, ref string) (WingInfo, error) {
	var info WingInfo
	err := p.view(ctx, func(r store.Reader) error {
		w, err := store.FindWing(r, ref)
		if err != nil {
			return err
		}
		info, err = wingInfo(r, w, true)
		return err
	})
	return info, err
}

// CheckDescription validates an optional description.
func CheckDescription(d string) error {
	if len(d) > 4096 || strings.ContainsFunc(d, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
		return fault.Invalid("description", "must be at most 4096 bytes without control characters")
	}
	return nil
}

// CreateWing creates a wing; created is false when it existed.
func (p *Palace) CreateWing(ctx context.Context, name, description string) (WingInfo, bool, error) {
	if err := store.CheckPlace("wing", name); err != nil {
		return WingInfo{}, false, err
	}
	if err := CheckDescription(description); err != nil {
		return WingInfo{}, false, err
	}
	type out struct {
		w       *store.Wing
		created bool
	}
	o, err := write(ctx, p, func(tx store.Tx) (out, error) {
		w, created, err := store.EnsureWing(tx, name, description)
		return out{w, created}, err
	})
	if err != nil {
		return WingInfo{}, false, err
	}
	info, err := p.Wing(ctx, o.w.ID)
	return info, o.created, err
}

// DeleteWing removes a wing with its rooms and drawers.
//
// A wing holding more drawers than one transaction can remove
// (store.DeleteBatch) is emptied a batch at a time, each committed; the
// wing and its rooms go with the last. A crash part-way leaves the wing
// with fewer drawers, and deleting it again finishes the work.
func (p *Palace) DeleteWing(ctx context.Context, ref string) (store.Removed, error) {
	return deleteInBatches(ctx, p, func(tx store.Tx) (store.Removed, bool, error) {
		w, err := store.FindWing(tx, ref)
		if err != nil {
			return store.Removed{}, false, err
		}
		if err := p.busy(ctx, w.ID, ""); err != nil {
			return store.Removed{}, false, err
		}
		rooms, err := tx.Rooms(w.ID)
		if err != nil {
			return store.Removed{}, false, err
		}
		var done store.Removed
		left := store.DeleteBatch
		for i := range rooms {
			n, more, err := store.DeleteSomeDrawers(tx, &rooms[i], left)
			if err != nil {
				return store.Removed{}, false, err
			}
			done.Drawers += n
			if left -= n; more || left == 0 {
				return done, true, nil
			}
		}
		// What mining kept for the wing goes too, in batches as well.
		if _, more, err := store.ForgetSomeMined(tx, w.ID, 10*store.DeleteBatch); err != nil || more {
			return done, more, err
		}
		n, err := store.DeleteWing(tx, w)
		n.Drawers += done.Drawers
		return n, false, err
	})
}

// deleteInBatches runs one transaction of a big delete after another
// until step says nothing is left, adding up what each removed.
func deleteInBatches(ctx context.Context, p *Palace, step func(tx store.Tx) (store.Removed, bool, error)) (store.Removed, error) {
	var total store.Removed
	for {
		var more bool
		n, err := write(ctx, p, func(tx store.Tx) (store.Removed, error) {
			n, m, err := step(tx)
			more = m
			return n, err
		})
		if err != nil {
			return total, err
		}
		total.Wings, total.Rooms, total.Drawers = total.Wings+n.Wings, total.Rooms+n.Rooms, total.Drawers+n.Drawers
		if !more {
			return total, nil
		}
	}
}

func (p *Palace) busy(ctx context.Context, wingID, roomID string) error {
	if p.Locked == nil {
		return nil
	}
	return p.Locked(ctx, wingID, roomID)
}

// Rooms lists a wing's rooms with counts.
func (p *Palace) Rooms(ctx context.Context, wingRef string) ([]RoomInfo, error) {
	info, err := p.Wing(ctx, wingRef)
	if err != nil {
		return nil, err
	}
	return info.Rooms, nil
}

// Room is one room.
func (p *Palace) Room(ctx context.Context, wingRef, roomRef string) (RoomInfo, error) {
	var info RoomInfo
	err := p.view(ctx, func(r store.Reader) error {
		w, rm, err := findRoom(r, wingRef, roomRef)
		if err != nil {
			return err
		}
		info, err = roomInfo(r, w, rm)
		return err
	})
	return info, err
}

func findRoom(r store.Reader, wingRef, roomRef string) (*store.Wing, *store.Room, error) {
	w, err := store.FindWing(r, wingRef)
	if err != nil {
		return nil, nil, err
	}
	rm, err := store.FindRoom(r, w, roomRef)
	return w, rm, err
}

// CreateRoom creates a room (and its wing); created is false when the
// room existed.
func (p *Palace) CreateRoom(ctx context.Context, wingRef, name, description string) (RoomInfo, bool, error) {
	if err := store.CheckPlace("room", name); err != nil {
		return RoomInfo{}, false, err
	}
	if err := CheckDescription(description); err != nil {
		return RoomInfo{}, false, err
	}
	if _, isID := store.CanonicalUUID(wingRef); !isID {
		if err := store.CheckPlace("wing", wingRef); err != nil {
			return RoomInfo{}, false, err
		}
	}
	type out struct {
		rm      *store.Room
		created bool
	}
	o, err := write(ctx, p, func(tx store.Tx) (out, error) {
		// A UUID wing must exist: look it up before writing anything.
		if _, isID := store.CanonicalUUID(wingRef); isID {
			if _, err := store.FindWing(tx, wingRef); err != nil {
				return out{}, err
			}
		}
		w, _, err := store.EnsureWing(tx, wingRef, "")
		if err != nil {
			return out{}, err
		}
		rm, created, err := store.EnsureRoom(tx, w, name, description)
		return out{rm, created}, err
	})
	if err != nil {
		return RoomInfo{}, false, err
	}
	info, err := p.Room(ctx, o.rm.WingID, o.rm.ID)
	return info, o.created, err
}

// DeleteRoom removes a room and its drawers (a room too big for one
// transaction is emptied a batch at a time, as DeleteWing does).
func (p *Palace) DeleteRoom(ctx context.Context, wingRef, roomRef string) (store.Removed, error) {
	return deleteInBatches(ctx, p, func(tx store.Tx) (store.Removed, bool, error) {
		w, rm, err := findRoom(tx, wingRef, roomRef)
		if err != nil {
			return store.Removed{}, false, err
		}
		if err := p.busy(ctx, w.ID, rm.ID); err != nil {
			return store.Removed{}, false, err
		}
		n, more, err := store.DeleteSomeDrawers(tx, rm, store.DeleteBatch)
		if err != nil || more {
			return store.Removed{Drawers: n}, more, err
		}
		r, err := store.DeleteRoom(tx, rm)
		r.Drawers += n
		return r, false, err
	})
}

// Preview is a drawer in a listing: never its full content.
type Preview struct {
	ID           string
	Name         string
	Preview      string
	Bytes        int
	Tags         []string
	Source       store.Source
	ValidFrom    time.Time
	ValidTo      *time.Time
	CreatedAt    time.Time
	SupersededBy string
}

// PreviewRunes is the length of a preview.
const PreviewRunes = 160

// MakePreview cuts content to a one-line preview.
func MakePreview(content string) string {
	s := strings.Join(strings.Fields(content), " ")
	r := []rune(s)
	if len(r) > PreviewRunes {
		return string(r[:PreviewRunes-1]) + "…"
	}
	return s
}

// Drawers lists a room's newest drawers as previews.
func (p *Palace) Drawers(ctx context.Context, wingRef, roomRef string, limit int, historical bool, cursor string) (list []Preview, next string, err error) {
	var at time.Time
	var after string
	if cursor != "" {
		if at, after, err = parseDrawerCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	out := []Preview{}
	more := false
	err = p.view(ctx, func(r store.Reader) error {
		_, rm, err := findRoom(r, wingRef, roomRef)
		if err != nil {
			return err
		}
		visit := func(d *store.Drawer) bool {
			if len(out) == limit {
				more = true
				return false
			}
			out = append(out, Preview{ID: d.ID, Name: d.Name, Preview: MakePreview(d.Content), Bytes: len(d.Content),
				Tags: d.Tags, Source: d.Source, ValidFrom: d.ValidFrom, ValidTo: d.ValidTo, CreatedAt: d.CreatedAt,
				SupersededBy: d.SupersededBy})
			return true
		}
		if cursor == "" {
			return r.Drawers(rm.ID, !historical, visit)
		}
		return r.DrawersBefore(rm.ID, !historical, at, after, visit)
	})
	if more && len(out) > 0 {
		last := out[len(out)-1]
		next = strconv.FormatInt(last.CreatedAt.UnixNano(), 36) + "." + last.ID
	}
	return out, next, err
}

// parseDrawerCursor reads a drawer list's cursor: the filing time (base-36
// nanoseconds) and id of the last drawer of the page before.
func parseDrawerCursor(c string) (time.Time, string, error) {
	ts, id, ok := strings.Cut(c, ".")
	ns, err := strconv.ParseInt(ts, 36, 64)
	if _, uerr := uuid.Parse(id); !ok || err != nil || uerr != nil {
		return time.Time{}, "", fault.Invalid("cursor", "is not a cursor a drawer list gave (pass its next_cursor as it is)")
	}
	return time.Unix(0, ns).UTC(), id, nil
}

// Drawer is one drawer in full, by name or id within a room.
func (p *Palace) Drawer(ctx context.Context, wingRef, roomRef, ref string) (*store.Drawer, error) {
	var d *store.Drawer
	err := p.view(ctx, func(r store.Reader) error {
		_, rm, err := findRoom(r, wingRef, roomRef)
		if err != nil {
			return err
		}
		d, err = store.FindDrawerIn(r, rm, ref)
		return err
	})
	return d, err
}

// DrawerByID is one drawer in full by id.
func (p *Palace) DrawerByID(ctx context.Context, id string) (*store.Drawer, error) {
	var d *store.Drawer
	err := p.view(ctx, func(r store.Reader) error {
		var err error
		d, err = store.FindDrawer(r, id)
		return err
	})
	return d, err
}

// CreateDrawer files a drawer.
func (p *Palace) CreateDrawer(ctx context.Context, in store.NewDrawer) (*store.WriteResult, error) {
	if _, isID := store.CanonicalUUID(in.Wing); !isID {
		if err := store.CheckPlace("wing", in.Wing); err != nil {
			return nil, err
		}
	}
	if _, isID := store.CanonicalUUID(in.Room); !isID {
		if err := store.CheckPlace("room", in.Room); err != nil {
			return nil, err
		}
	}
	if in.Prepared == nil && p.Dedup.Enabled {
		// Judge the near candidates here, in parallel with other requests,
		// so the one writer only checks what changed since.
		_ = p.view(ctx, func(r store.Reader) error {
			in.Prepared = store.Prepare(r, in, p.Dedup)
			return nil
		})
	}
	return write(ctx, p, func(tx store.Tx) (*store.WriteResult, error) {
		return store.CreateDrawer(tx, in, p.Dedup)
	})
}

// DeleteDrawer removes one drawer.
func (p *Palace) DeleteDrawer(ctx context.Context, wingRef, roomRef, ref string) (store.Removed, error) {
	return write(ctx, p, func(tx store.Tx) (store.Removed, error) {
		_, rm, err := findRoom(tx, wingRef, roomRef)
		if err != nil {
			return store.Removed{}, err
		}
		d, err := store.FindDrawerIn(tx, rm, ref)
		if err != nil {
			return store.Removed{}, err
		}
		return store.Removed{Drawers: 1}, store.DeleteDrawer(tx, d)
	})
}

// Supersede corrects a drawer.
func (p *Palace) Supersede(ctx context.Context, in store.Supersession) (*store.SupersedeResult, error) {
	if _, ok := store.CanonicalUUID(in.DrawerID); !ok {
		return nil, fault.Newf(fault.InputInvalid, "address the drawer by its UUID", "drawer id %q is not a UUID", in.DrawerID)
	}
	return write(ctx, p, func(tx store.Tx) (*store.SupersedeResult, error) {
		return store.Supersede(tx, in, p.Dedup)
	})
}

// History is a drawer's supersession chain, oldest first.
func (p *Palace) History(ctx context.Context, id string) (*store.Drawer, []store.Drawer, error) {
	var d *store.Drawer
	var versions []store.Drawer
	err := p.view(ctx, func(r store.Reader) error {
		var err error
		d, versions, err = store.History(r, id)
		return err
	})
	return d, versions, err
}

// Duplicates is a drawer's similar_to links.
func (p *Palace) Duplicates(ctx context.Context, id string) (*store.Drawer, []store.SimilarView, error) {
	var d *store.Drawer
	var similar []store.SimilarView
	err := p.view(ctx, func(r store.Reader) error {
		var err error
		if d, err = store.FindDrawer(r, id); err != nil {
			return err
		}
		similar, err = store.Similar(r, d)
		return err
	})
	return d, similar, err
}

// DeleteDuplicate removes one similar_to link of a drawer.
func (p *Palace) DeleteDuplicate(ctx context.Context, id, link string) error {
	_, err := write(ctx, p, func(tx store.Tx) (bool, error) {
		d, err := store.FindDrawer(tx, id)
		if err != nil {
			return false, err
		}
		return true, store.DeleteSimilar(tx, d, link)
	})
	return err
}

// CheckAgent validates an agent identity.
func CheckAgent(agent string) error {
	switch {
	case strings.TrimSpace(agent) == "":
		return fault.Invalid("agent_identity", "is required")
	case strings.TrimSpace(agent) != agent || strings.IndexFunc(agent, unicode.IsControl) >= 0 || len(agent) > 256:
		return fault.Invalid("agent_identity", "must have no surrounding spaces or control characters and be at most 256 bytes")
	}
	return nil
}

// DiaryWrite files a diary entry of an agent in a wing's diary room. An
// exact copy of the same agent's current entry returns it.
func (p *Palace) DiaryWrite(ctx context.Context, agent, wing, content, by string) (*store.WriteResult, error) {
	if err := CheckAgent(agent); err != nil {
		return nil, err
	}
	if wing == "" {
		return nil, fault.Invalid("wing", "is required")
	}
	return p.CreateDrawer(ctx, store.NewDrawer{
		Wing: wing, Room: DiaryRoom, Content: content, Tags: []string{"diary"},
		Source: store.Source{Kind: store.KindManual, Agent: agent}, Provenance: store.Provenance{RequestedBy: by},
		Diary: true, Policy: store.ExactReturnsExisting,
	})
}

// DiaryRead is an agent's newest diary entries in a wing.
func (p *Palace) DiaryRead(ctx context.Context, agent, wingRef string, limit int) ([]store.Drawer, error) {
	if err := CheckAgent(agent); err != nil {
		return nil, err
	}
	if wingRef == "" {
		return nil, fault.Invalid("wing", "is required")
	}
	out := []store.Drawer{}
	err := p.view(ctx, func(r store.Reader) error {
		w, err := store.FindWing(r, wingRef)
		if err != nil {
			return err
		}
		rm, err := r.RoomByName(w.ID, DiaryRoom)
		if err != nil || rm == nil {
			return err
		}
		return r.Drawers(rm.ID, true, func(d *store.Drawer) bool {
			if d.Diary && d.Source.Agent == agent {
				out = append(out, *d)
			}
			return len(out) < limit
		})
	})
	return out, err
}

// Counts are the palace totals, kept by the store with every write (not
// recounted: status is polled).
func (p *Palace) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	err := p.view(ctx, func(r store.Reader) (err error) {
		c, err = r.Counts()
		return err
	})
	return c, err
}

// WingCounts names every wing with its current drawers, most first (ties
// by name), cached for the change-log sequence it was read at.
func (p *Palace) WingCounts(ctx context.Context) ([]api.WingCount, error) {
	var out []api.WingCount
	err := p.view(ctx, func(r store.Reader) error {
		seq, err := r.LastSeq()
		if err != nil {
			return err
		}
		p.countsMu.Lock()
		defer p.countsMu.Unlock()
		if p.winged != nil && p.winged.seq == seq {
			out = p.winged.wings
			return nil
		}
		wings, err := r.Wings()
		if err != nil {
			return err
		}
		out = make([]api.WingCount, 0, len(wings))
		for i := range wings {
			info, err := wingInfo(r, &wings[i], false)
			if err != nil {
				return err
			}
			out = append(out, api.WingCount{Name: info.Name, Drawers: info.DrawerCount})
		}
		slices.SortFunc(out, func(a, b api.WingCount) int {
			if a.Drawers != b.Drawers {
				return cmp.Compare(b.Drawers, a.Drawers)
			}
			return strings.Compare(a.Name, b.Name)
		})
		p.winged = &wingsAt{seq: seq, wings: out}
		return nil
	})
	return out, err
}

// The bounds of a Filed count.
const (
	MaxFiledBuckets = 366
	MinFiledStep    = time.Minute
	MaxFiledStep    = 366 * 24 * time.Hour
)

// Filed counts the palace's stored drawers (of any validity) filed in each
// of buckets consecutive spans of step from since: the dashboard's chart
// and `loci stats`.
func (p *Palace) Filed(ctx context.Context, since time.Time, step time.Duration, buckets int) ([]int, error) {
	if buckets < 1 || buckets > MaxFiledBuckets {
		return nil, fault.Invalid("buckets", fmt.Sprintf("%d is outside 1 to %d", buckets, MaxFiledBuckets))
	}
	if step < MinFiledStep || step > MaxFiledStep {
		return nil, fault.Invalid("step_secs", fmt.Sprintf("%d is outside %d to %d seconds", int64(step/time.Second), int64(MinFiledStep/time.Second), int64(MaxFiledStep/time.Second)))
	}
	var out []int
	err := p.view(ctx, func(r store.Reader) (err error) {
		out, err = r.Filed(since, step, buckets)
		return err
	})
	return out, err
}

// Describe names a drawer for logs and CLI messages.
func Describe(d *store.Drawer) string {
	if d.Name != "" {
		return fmt.Sprintf("%s (%s)", d.Name, d.ID)
	}
	return d.ID
}
