-- The change log: numbered under the writer lock, so gapless and committed in order.
CREATE TABLE IF NOT EXISTS changes (
    seq    bigint PRIMARY KEY,
    at     timestamptz NOT NULL,
    kind   text NOT NULL,
    action text NOT NULL,
    id     text NOT NULL,
    origin text NOT NULL DEFAULT ''
);
