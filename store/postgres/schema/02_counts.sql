-- The palace's kept counts: one row, added to by every write transaction.
CREATE TABLE IF NOT EXISTS palace_counts (
    id             int PRIMARY KEY CHECK (id = 1),
    wings          bigint NOT NULL DEFAULT 0,
    rooms          bigint NOT NULL DEFAULT 0,
    drawers        bigint NOT NULL DEFAULT 0,
    drawers_stored bigint NOT NULL DEFAULT 0,
    links          bigint NOT NULL DEFAULT 0
);
INSERT INTO palace_counts(id) VALUES (1) ON CONFLICT (id) DO NOTHING;
