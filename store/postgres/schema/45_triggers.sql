-- Triggers: each trigger's state (schedule slot, counters) and the webhook
-- deliveries accepted for it, remembered by delivery id.
CREATE TABLE IF NOT EXISTS trigger_states (
    name text COLLATE "C" PRIMARY KEY,
    rec  json NOT NULL
);
CREATE TABLE IF NOT EXISTS trigger_deliveries (
    trigger text COLLATE "C" NOT NULL,
    id      text COLLATE "C" NOT NULL,
    rec     json NOT NULL,
    PRIMARY KEY (trigger, id)
);
