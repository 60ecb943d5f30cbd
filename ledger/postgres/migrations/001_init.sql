-- Version 1 of the govledger schema. Every name lives in the schema
-- "govledger"; schema_version (created by the driver) records which of
-- these files were applied, each in its own transaction.

-- head: the one row (id 1) naming the ledger and its stored head. Append
-- locks it (SELECT ... FOR UPDATE) to compare and append.
CREATE TABLE govledger.head (
    id       smallint    PRIMARY KEY CHECK (id = 1),
    origin   text        NOT NULL,
    created  timestamptz NOT NULL,
    seq      bigint      NOT NULL CHECK (seq >= 0),
    hash     bytea       NOT NULL CHECK (octet_length(hash) = 32),
    -- time of entry seq: Unix seconds and nanoseconds (timestamptz keeps
    -- only microseconds); 0001-01-01 while empty.
    time_s   bigint      NOT NULL,
    time_ns  integer     NOT NULL CHECK (time_ns BETWEEN 0 AND 999999999),
    manifest bytea       CHECK (octet_length(manifest) = 32), -- snapshot in force, NULL: none
    lock     bytea       CHECK (octet_length(lock) = 32),
    key      bytea       NOT NULL DEFAULT ''::bytea          -- checkpoint verifier key in force
);

-- entries: the canonical bytes of every entry, and the columns Find
-- filters on. Strings are bytea (PostgreSQL text cannot hold NUL); each
-- *_x column is the xxhash64 of its string, so the indexes stay small
-- whatever the string's length, and a lookup compares the string itself.
-- source holds an unblock entry's agent.
CREATE TABLE govledger.entries (
    seq         bigint  PRIMARY KEY CHECK (seq >= 1),
    raw         bytea   NOT NULL,
    hash        bytea   NOT NULL CHECK (octet_length(hash) = 32),
    handoff_id  bytea,
    handoff_x   bigint,
    workflow_id bytea,
    workflow_x  bigint,
    source      bytea,
    source_x    bigint,
    target      bytea,
    target_x    bigint,
    decision    text,
    time_s      bigint  NOT NULL,
    time_ns     integer NOT NULL
);
CREATE INDEX entries_handoff  ON govledger.entries (handoff_x, seq)  WHERE handoff_x IS NOT NULL;
CREATE INDEX entries_workflow ON govledger.entries (workflow_x, seq) WHERE workflow_x IS NOT NULL;
CREATE INDEX entries_source   ON govledger.entries (source_x, seq)   WHERE source_x IS NOT NULL;
CREATE INDEX entries_target   ON govledger.entries (target_x, seq)   WHERE target_x IS NOT NULL;
CREATE INDEX entries_decision ON govledger.entries (decision, seq)   WHERE decision IS NOT NULL;
CREATE INDEX entries_time     ON govledger.entries (time_s, time_ns, seq);

-- blobs: payload and snapshot bytes under their SHA-256.
CREATE TABLE govledger.blobs (
    sha256 bytea PRIMARY KEY CHECK (octet_length(sha256) = 32),
    bytes  bytea NOT NULL
);

-- redacted: blobs a redaction erased, with the head seq of the batch that
-- erased them.
CREATE TABLE govledger.redacted (
    sha256 bytea  PRIMARY KEY CHECK (octet_length(sha256) = 32),
    seq    bigint NOT NULL
);

-- tree: the Merkle tree's stored hashes (golang.org/x/mod/sumdb/tlog
-- storage order).
CREATE TABLE govledger.tree (
    idx  bigint PRIMARY KEY CHECK (idx >= 0),
    hash bytea  NOT NULL CHECK (octet_length(hash) = 32)
);

-- accepted: the first acceptance of each handoff id, keyed by the SHA-256
-- of the id.
CREATE TABLE govledger.accepted (
    id_sha256 bytea  PRIMARY KEY CHECK (octet_length(id_sha256) = 32),
    seq       bigint NOT NULL,
    payload   bytea  NOT NULL CHECK (octet_length(payload) = 32)
);

-- idempotency: the first use of each idempotency key, keyed by its SHA-256.
CREATE TABLE govledger.idempotency (
    key_sha256 bytea  PRIMARY KEY CHECK (octet_length(key_sha256) = 32),
    seq        bigint NOT NULL,
    payload    bytea  NOT NULL CHECK (octet_length(payload) = 32)
);

-- blocked: the agents blocked at the head and the entry that blocked each.
CREATE TABLE govledger.blocked (
    agent_sha256 bytea  PRIMARY KEY CHECK (octet_length(agent_sha256) = 32),
    agent        bytea  NOT NULL,
    seq          bigint NOT NULL
);
