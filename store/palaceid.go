package store

import (
	"context"

	"github.com/google/uuid"
)

// metaPalaceID is the meta key of the palace's identity.
const metaPalaceID = "palace_id"

// PalaceID answers the palace's identity, a UUID given the first time it
// is asked and kept in the operational records (Meta): backups and
// exports name the palace they came from, so an incremental backup is
// never applied to another palace. Two callers asking at once get the
// same answer (compare-and-swap).
func PalaceID(ctx context.Context, db DB) (string, error) {
	if id, ok, err := db.GetMeta(ctx, metaPalaceID); err != nil || ok {
		return id, err
	}
	id := uuid.NewString()
	if _, err := db.CompareAndSwapMeta(ctx, metaPalaceID, "", id); err != nil {
		return "", err
	}
	id, _, err := db.GetMeta(ctx, metaPalaceID)
	return id, err
}

// KnownPalaceID answers the palace's identity when it has one, without
// giving one (ok false: none yet, so nothing was backed up or exported
// under it): for readers that must not write, as doctor.
func KnownPalaceID(ctx context.Context, db DB) (id string, ok bool, err error) {
	return db.GetMeta(ctx, metaPalaceID)
}
