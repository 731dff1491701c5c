-- Operational records: the schema hash, the data-step watermark, migration bookkeeping.
CREATE TABLE IF NOT EXISTS loci_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
