package transport

import (
	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
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

func apiRoom(r actors.RoomInfo) api.Room {
	return api.Room{ID: r.ID, WingID: r.WingID, Wing: r.WingName, Name: r.Name, Description: r.Description,
		CreatedAt: r.CreatedAt, Drawers: r.DrawerCount, Stored: r.Stored}
}

func apiRooms(rooms []actors.RoomInfo) []api.Room {
	out := make([]api.Room, len(rooms))
	for i, r := range rooms {
		out[i] = apiRoom(r)
	}
	return out
}

// apiWing is a wing with its counts, and its rooms when the service gave
// them.
func apiWing(w actors.WingInfo) api.Wing {
	out := api.Wing{ID: w.ID, Name: w.Name, Description: w.Description, CreatedAt: w.CreatedAt,
		RoomCount: w.RoomCount, Drawers: w.DrawerCount}
	if len(w.Rooms) > 0 {
		out.Rooms = apiRooms(w.Rooms)
	}
	return out
}

func apiWings(wings []actors.WingInfo) api.WingList {
	out := api.WingList{Wings: make([]api.Wing, len(wings))}
	for i, w := range wings {
		out.Wings[i] = apiWing(w)
	}
	return out
}

func apiRemoved(n store.Removed) api.RemovedAnswer {
	return api.RemovedAnswer{Removed: api.Removed{Wings: n.Wings, Rooms: n.Rooms, Drawers: n.Drawers}}
}
