-- Stored vectors: one row per drawer and profile. The vector is bytea,
-- 4 bytes a dimension (IEEE float32, little endian, as the embedded store
-- keeps it); rec is the embedding's record without its vector.
CREATE TABLE IF NOT EXISTS embeddings (
    profile   text COLLATE "C" NOT NULL,
    drawer_id text COLLATE "C" NOT NULL,
    vector    bytea NOT NULL,
    rec       jsonb NOT NULL,
    PRIMARY KEY (profile, drawer_id)
);
-- A drawer's vectors, deleted with it.
CREATE INDEX IF NOT EXISTS embeddings_drawer ON embeddings (drawer_id);
