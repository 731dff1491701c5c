-- The knowledge graph. Identifiers and names are COLLATE "C" so that orders are byte orders, as in the
-- embedded store, whatever the database's locale.
CREATE TABLE IF NOT EXISTS entities (
    id   text COLLATE "C" PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    key  text COLLATE "C" NOT NULL,
    rec  jsonb NOT NULL
);
-- The entity indexes of resolution: kind 0 the canonical name, 1 the normalised key, 2 an alias's key,
-- 3 the key and each one-rune deletion of it. The primary key answers EntityIDs with one index scan in
-- id order, and Entities in name order (kind 0).
CREATE TABLE IF NOT EXISTS entity_index (
    kind   smallint NOT NULL,
    value  text COLLATE "C" NOT NULL,
    entity text COLLATE "C" NOT NULL,
    PRIMARY KEY (kind, value, entity)
);
-- possibly_same_as links, read from either end in id order.
CREATE TABLE IF NOT EXISTS entity_links (
    id      text COLLATE "C" PRIMARY KEY,
    from_id text COLLATE "C" NOT NULL,
    to_id   text COLLATE "C" NOT NULL,
    rec     jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_links_from ON entity_links (from_id, id);
CREATE INDEX IF NOT EXISTS entity_links_to ON entity_links (to_id, id);
-- A drawer's mention of an entity: by drawer (the key) and by entity.
CREATE TABLE IF NOT EXISTS mentions (
    drawer text COLLATE "C" NOT NULL,
    entity text COLLATE "C" NOT NULL,
    rec    jsonb NOT NULL,
    PRIMARY KEY (drawer, entity)
);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity, drawer);
-- Facts, read by id and under their subject and their object in id order.
CREATE TABLE IF NOT EXISTS relationships (
    id      text COLLATE "C" PRIMARY KEY,
    subject text COLLATE "C" NOT NULL,
    object  text COLLATE "C" NOT NULL,
    rec     jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS relationships_subject ON relationships (subject, id);
CREATE INDEX IF NOT EXISTS relationships_object ON relationships (object, id);
-- Lifecycle links between facts (confirms, contradicts, refines), read from either end in id order.
CREATE TABLE IF NOT EXISTS relationship_links (
    id      text COLLATE "C" PRIMARY KEY,
    from_id text COLLATE "C" NOT NULL,
    to_id   text COLLATE "C" NOT NULL,
    rec     jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS relationship_links_from ON relationship_links (from_id, id);
CREATE INDEX IF NOT EXISTS relationship_links_to ON relationship_links (to_id, id);
