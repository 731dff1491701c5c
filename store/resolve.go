package store

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
)

// NewID is a fresh UUID (version 7, so ids sort roughly by creation).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// CanonicalUUID returns the canonical spelling of s when it is a UUID.
func CanonicalUUID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// CheckPlace validates a wing or room name as loci::palace::path_invalid.
func CheckPlace(what, name string) error {
	if p := names.Place(name); p != "" {
		return fault.Newf(fault.PalacePathInvalid,
			"wing and room names are one non-blank segment without '/', control characters or surrounding spaces, and not a UUID",
			"%s name %q %s", what, name, p)
	}
	return nil
}

// CheckDrawerName validates a drawer name as loci::palace::path_invalid.
func CheckDrawerName(name string) error {
	if p := names.Drawer(name); p != "" {
		return fault.Newf(fault.PalacePathInvalid,
			"drawer names may contain '/' but no empty, '.' or '..' segment, no control characters or surrounding spaces, and may not be a UUID",
			"drawer name %q %s", name, p)
	}
	return nil
}

func wingNotFound(ref string) error {
	return fault.Newf(fault.PalaceWingNotFound, "list the wings to see their names",
		"no wing answers to %q", ref)
}

func roomNotFound(wing, ref string) error {
	arg := wing
	if arg == "" || strings.ContainsAny(arg, " \t'\"`$\\*?;&|<>()#~") {
		arg = strconv.Quote(arg)
	}
	return fault.Newf(fault.PalaceRoomNotFound, "list the wing's rooms with `loci room list --wing "+arg+"`",
		"no room answers to %q in wing %q", ref, wing)
}

// DrawerNotFound is loci::palace::drawer_not_found for a reference.
func DrawerNotFound(ref string) error {
	return fault.Newf(fault.PalaceDrawerNotFound, "check the drawer's id or name; list a room's drawers to find it",
		"no drawer answers to %q", ref)
}

// FindWing resolves a wing by UUID or name.
func FindWing(r Reader, ref string) (*Wing, error) {
	if id, ok := CanonicalUUID(ref); ok {
		w, err := r.Wing(id)
		if err != nil {
			return nil, err
		}
		if w == nil {
			return nil, wingNotFound(ref)
		}
		return w, nil
	}
	if err := CheckPlace("wing", ref); err != nil {
		return nil, err
	}
	w, err := r.WingByName(ref)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return nil, wingNotFound(ref)
	}
	return w, nil
}

// FindRoom resolves a room by UUID or name inside the wing.
func FindRoom(r Reader, w *Wing, ref string) (*Room, error) {
	if id, ok := CanonicalUUID(ref); ok {
		rm, err := r.Room(id)
		if err != nil {
			return nil, err
		}
		if rm == nil || rm.WingID != w.ID {
			return nil, roomNotFound(w.Name, ref)
		}
		return rm, nil
	}
	if err := CheckPlace("room", ref); err != nil {
		return nil, err
	}
	rm, err := r.RoomByName(w.ID, ref)
	if err != nil {
		return nil, err
	}
	if rm == nil {
		return nil, roomNotFound(w.Name, ref)
	}
	return rm, nil
}

// FindDrawer resolves a drawer by id alone.
func FindDrawer(r Reader, ref string) (*Drawer, error) {
	id, ok := CanonicalUUID(ref)
	if !ok {
		return nil, fault.Newf(fault.InputInvalid, "drawer ids are UUIDs, e.g. 0190c5a2-7b1e-7c3d-9f00-1234567890ab",
			"drawer id %q is not a UUID", ref)
	}
	d, err := r.Drawer(id)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, DrawerNotFound(ref)
	}
	return d, nil
}

// FindDrawerIn resolves a drawer by UUID or name inside a room. A name
// finds the current drawer holding it.
func FindDrawerIn(r Reader, rm *Room, ref string) (*Drawer, error) {
	if id, ok := CanonicalUUID(ref); ok {
		d, err := r.Drawer(id)
		if err != nil {
			return nil, err
		}
		if d == nil || d.RoomID != rm.ID {
			return nil, DrawerNotFound(ref)
		}
		return d, nil
	}
	if err := CheckDrawerName(ref); err != nil {
		return nil, err
	}
	d, err := r.DrawerByName(rm.ID, ref)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, DrawerNotFound(ref)
	}
	return d, nil
}

// EnsureWing finds a wing by name or UUID, creating it (by name only) when
// absent. created reports whether it was made.
func EnsureWing(tx Tx, ref, description string) (w *Wing, created bool, err error) {
	w, err = FindWing(tx, ref)
	if err == nil || !fault.Is(err, fault.PalaceWingNotFound) {
		return w, false, err
	}
	if _, isID := CanonicalUUID(ref); isID {
		return nil, false, err
	}
	w = &Wing{ID: NewID(), Name: ref, Description: strings.TrimSpace(description), CreatedAt: tx.Now()}
	if err := tx.PutWing(w); err != nil {
		return nil, false, err
	}
	return w, true, tx.Log(ChangeWing, ActionCreated, w.ID)
}

// EnsureRoom finds a room by name or UUID inside the wing, creating it by
// name when absent.
func EnsureRoom(tx Tx, w *Wing, ref, description string) (rm *Room, created bool, err error) {
	rm, err = FindRoom(tx, w, ref)
	if err == nil || !fault.Is(err, fault.PalaceRoomNotFound) {
		return rm, false, err
	}
	if _, isID := CanonicalUUID(ref); isID {
		return nil, false, err
	}
	rm = &Room{ID: NewID(), WingID: w.ID, Name: ref, Description: strings.TrimSpace(description), CreatedAt: tx.Now()}
	if err := tx.PutRoom(rm); err != nil {
		return nil, false, err
	}
	return rm, true, tx.Log(ChangeRoom, ActionCreated, rm.ID)
}
