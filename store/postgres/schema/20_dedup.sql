-- Deduplication (store/postgres/dedup.go). One row per current drawer's dedup record: exact and
-- normalised copies are found by (scope, hash) and (scope, fingerprint), oldest first (seq); mins
-- (2 bytes each, big-endian) and norm are its sketch, read to verify a near candidate; bands its
-- MinHash bands, kept to delete its dedup_bands rows through their index. rec is the record without
-- its sketch (DedupRecord reads it).
CREATE TABLE IF NOT EXISTS dedup (
    drawer_id   text PRIMARY KEY,
    scope       text NOT NULL,
    hash        text NOT NULL,
    fingerprint text NOT NULL,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    mins        bytea,
    norm        bytea NOT NULL DEFAULT '',
    bands       bigint[] NOT NULL DEFAULT '{}',
    rec         jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS dedup_by_hash ON dedup (scope, hash, seq);
CREATE INDEX IF NOT EXISTS dedup_by_fingerprint ON dedup (scope, fingerprint, seq);

-- The near-duplicate index, answered by the database: one row per (drawer, MinHash band) with the
-- drawer's normalised length, so that DedupNear is one index scan per band (band = ANY, length
-- within the window).
CREATE TABLE IF NOT EXISTS dedup_bands (
    scope    text NOT NULL,
    band     bigint NOT NULL,
    norm_len int NOT NULL,
    drawer   uuid NOT NULL
);
CREATE INDEX IF NOT EXISTS dedup_bands_lookup ON dedup_bands (scope, band, norm_len) INCLUDE (drawer);
-- What a near candidate carries (the low byte of each minimum, then the character bag), by drawer:
-- a narrow table, so that the candidates' rows are few pages.
CREATE TABLE IF NOT EXISTS dedup_near (
    drawer uuid PRIMARY KEY,
    near   bytea NOT NULL
);

-- similar_to links: by id, and from either of their drawers (Links, LinkEnds: by id).
CREATE TABLE IF NOT EXISTS links (
    id    text PRIMARY KEY,
    older text NOT NULL,
    newer text NOT NULL,
    rec   jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS links_by_older ON links (older, id);
CREATE INDEX IF NOT EXISTS links_by_newer ON links (newer, id);
