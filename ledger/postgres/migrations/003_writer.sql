-- Version 3: writer, where the replica holding the writer role says how
-- the others reach it.
--
-- The writer role is the session-level advisory lock writerLock (role.go)
-- on a connection of its own: PostgreSQL hands it to the next replica
-- asking for it as soon as the holder's session ends. The holder then
-- writes this one row: the address on which it takes the commit groups
-- the other replicas forward (addr), a secret they present (secret,
-- random per tenure) and a tenure counter (epoch). The row names the
-- writer only while the lock is held: readers check pg_locks too.
-- Nothing about the ledger depends on the row: every commit still goes
-- through govledger.advance's compare-and-append.
CREATE TABLE govledger.writer (
    id     integer     PRIMARY KEY CHECK (id = 1),
    addr   text        NOT NULL,
    secret bytea       NOT NULL,
    epoch  bigint      NOT NULL,
    since  timestamptz NOT NULL
);
