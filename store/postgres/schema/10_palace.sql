-- The palace: wings, rooms and drawers, each row the record as JSON (rec)
-- beside the columns its lookups and orders need. Ids and names compare
-- byte-wise (COLLATE "C"), as the embedded store's keys do: a page cursor
-- (created_ns, id) means the same thing on both.
CREATE TABLE IF NOT EXISTS wings (
    id   text COLLATE "C" PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    rec  jsonb NOT NULL
);
-- WingByName, Wings (by name).
CREATE INDEX IF NOT EXISTS wings_name ON wings (name, id);

CREATE TABLE IF NOT EXISTS rooms (
    id      text COLLATE "C" PRIMARY KEY,
    wing_id text COLLATE "C" NOT NULL,
    name    text COLLATE "C" NOT NULL,
    rec     jsonb NOT NULL
);
-- RoomByName, Rooms (a wing's, by name).
CREATE INDEX IF NOT EXISTS rooms_wing_name ON rooms (wing_id, name, id);

-- created_ns is created_at in Unix nanoseconds (timestamptz keeps only
-- microseconds: two drawers filed in one microsecond would tie, and a
-- cursor's nanoseconds would not find its drawer). current is valid_to
-- IS NULL, kept with every write.
CREATE TABLE IF NOT EXISTS drawers (
    id         text COLLATE "C" PRIMARY KEY,
    wing_id    text COLLATE "C" NOT NULL,
    room_id    text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL DEFAULT '',
    created_ns bigint NOT NULL,
    current    boolean NOT NULL,
    rec        jsonb NOT NULL
);
-- A room's drawers newest first, pages after a cursor, neighbours, counts
-- (current included: CountDrawers and DrawerIDs read the index alone).
CREATE INDEX IF NOT EXISTS drawers_room_time ON drawers (room_id, created_ns, id) INCLUDE (current);
-- DrawerByName: only current drawers hold a name.
CREATE INDEX IF NOT EXISTS drawers_room_name ON drawers (room_id, name) WHERE current AND name <> '';
-- Filed: the drawers of every room filed in a window.
CREATE INDEX IF NOT EXISTS drawers_created ON drawers (created_ns);
