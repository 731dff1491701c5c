-- What mining keeps per source mined into a wing (key: store.TargetKey):
-- the state (cursor, last job and run), its documents' filed revisions,
-- the document each chunk drawer was filed from, and the documents to file
-- again. Keys are COLLATE "C" (byte order, as the embedded store lists
-- them); rec is json, not jsonb, so that a cursor reads back byte for byte.
CREATE TABLE IF NOT EXISTS sources (
    key     text COLLATE "C" PRIMARY KEY,
    wing_id text NOT NULL DEFAULT '',
    rec     json NOT NULL
);
CREATE TABLE IF NOT EXISTS source_documents (
    source text COLLATE "C" NOT NULL,
    id     text COLLATE "C" NOT NULL,
    rec    json NOT NULL,
    PRIMARY KEY (source, id)
);
CREATE TABLE IF NOT EXISTS chunk_owners (
    drawer text COLLATE "C" PRIMARY KEY,
    source text COLLATE "C" NOT NULL,
    doc    text COLLATE "C" NOT NULL
);
CREATE TABLE IF NOT EXISTS stale_documents (
    source text COLLATE "C" NOT NULL,
    doc    text COLLATE "C" NOT NULL,
    PRIMARY KEY (source, doc)
);
