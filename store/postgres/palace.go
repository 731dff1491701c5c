package postgres

import (
	"github.com/loci-dev/loci/store"
	"time"
)

// Wing is not written yet.
func (t *tx) Wing(id string) (*store.Wing, error) {
	return nil, errTODO
}

// WingByName is not written yet.
func (t *tx) WingByName(name string) (*store.Wing, error) {
	return nil, errTODO
}

// Wings is not written yet.
func (t *tx) Wings() ([]store.Wing, error) {
	return nil, errTODO
}

// Room is not written yet.
func (t *tx) Room(id string) (*store.Room, error) {
	return nil, errTODO
}

// RoomByName is not written yet.
func (t *tx) RoomByName(wingID, name string) (*store.Room, error) {
	return nil, errTODO
}

// Rooms is not written yet.
func (t *tx) Rooms(wingID string) ([]store.Room, error) {
	return nil, errTODO
}

// Drawer is not written yet.
func (t *tx) Drawer(id string) (*store.Drawer, error) {
	return nil, errTODO
}

// HasDrawer is not written yet.
func (t *tx) HasDrawer(id string) (bool, error) {
	return false, errTODO
}

// DrawersByID is not written yet.
func (t *tx) DrawersByID(ids []string) ([]*store.Drawer, error) {
	return nil, errTODO
}

// DrawerByName is not written yet.
func (t *tx) DrawerByName(roomID, name string) (*store.Drawer, error) {
	return nil, errTODO
}

// Drawers is not written yet.
func (t *tx) Drawers(roomID string, current bool, fn func(*store.Drawer) bool) error {
	return errTODO
}

// DrawersBefore is not written yet.
func (t *tx) DrawersBefore(roomID string, current bool, createdAt time.Time, id string, fn func(*store.Drawer) bool) error {
	return errTODO
}

// DrawerIDs is not written yet.
func (t *tx) DrawerIDs(roomID string) ([]string, error) {
	return nil, errTODO
}

// Neighbours is not written yet.
func (t *tx) Neighbours(ds []*store.Drawer, n int) ([][]string, error) {
	return nil, errTODO
}

// CountDrawers is not written yet.
func (t *tx) CountDrawers(roomID string) (current, stored int, err error) {
	err = errTODO
	return
}

// Filed is not written yet.
func (t *tx) Filed(since time.Time, step time.Duration, buckets int) ([]int, error) {
	return nil, errTODO
}

// Recount is not written yet.
func (t *tx) Recount() (store.Counts, error) {
	return store.Counts{}, errTODO
}

// EachDrawer is not written yet.
func (t *tx) EachDrawer(fn func(*store.Drawer) bool) error {
	return errTODO
}

// PutWing is not written yet.
func (t *tx) PutWing(w *store.Wing) error {
	return errTODO
}

// DeleteWing is not written yet.
func (t *tx) DeleteWing(w *store.Wing) error {
	return errTODO
}

// PutRoom is not written yet.
func (t *tx) PutRoom(r *store.Room) error {
	return errTODO
}

// DeleteRoom is not written yet.
func (t *tx) DeleteRoom(r *store.Room) error {
	return errTODO
}

// PutDrawer is not written yet.
func (t *tx) PutDrawer(d *store.Drawer, prev *store.Drawer) error {
	return errTODO
}

// DeleteDrawer is not written yet.
func (t *tx) DeleteDrawer(d *store.Drawer) error {
	return errTODO
}
