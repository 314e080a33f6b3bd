-- The table of the admit PostgreSQL quota store (Go package quota/pgquota).
--
-- Store.Migrate runs this file, safe to run again, with the configured table
-- name in place of admit_quota. To create the table by hand (for a role
-- without CREATE rights), run it as it is for the default name, or print the
-- statements for another name with Store.Schema.
CREATE TABLE IF NOT EXISTS admit_quota (
    -- The rule's name, a colon, and the subject (32 hex characters).
    bucket       text        NOT NULL,
    -- Fixed window: the window's start. GCRA: always '-infinity'.
    window_start timestamptz NOT NULL,
    -- Fixed window: the calls counted in the window, refused ones included.
    -- GCRA: the cost the latest call was granted, 0 when it was refused.
    count        bigint      NOT NULL,
    -- GCRA only: the theoretical arrival time, in nanoseconds since the Unix
    -- epoch. NULL for fixed-window rows.
    tat          bigint,
    -- From this time on the row decides like a missing one; Sweep deletes it.
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (bucket, window_start)
) WITH (fillfactor = 70); -- room on each page for HOT updates of count and tat

-- Sweep finds expired rows through this index. Fixed-window increments never
-- change expires_at, and GCRA calls change it at most once per burst period or
-- per minute, whichever is longer, so almost every update stays HOT.
CREATE INDEX IF NOT EXISTS admit_quota_expires_at_idx ON admit_quota (expires_at);
