-- The generated token's digest: one row (the spec's auth_state), absent
-- until a token is generated.
CREATE TABLE IF NOT EXISTS auth_state (
    id  int PRIMARY KEY CHECK (id = 1),
    rec json NOT NULL
);
