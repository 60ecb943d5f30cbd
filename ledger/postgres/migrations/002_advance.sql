-- Version 2: advance, the compare-and-append of a commit as one statement.
--
-- Append sends a whole commit in one round trip (one pipeline, one
-- implicit transaction): advance first, then the inserts. advance moves
-- the head row from (at_seq, at_hash) to the new head, waiting for the
-- row lock another writer holds; when the head is no longer at_seq and
-- at_hash it raises SQLSTATE GL409, which aborts the transaction before
-- any insert runs. SQLSTATE GL500: the head row is missing.
CREATE FUNCTION govledger.advance(at_seq bigint, at_hash bytea, new_seq bigint, new_hash bytea,
                                  new_time_s bigint, new_time_ns integer, new_manifest bytea,
                                  new_lock bytea, new_key bytea) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cur_seq bigint;
BEGIN
    UPDATE govledger.head
       SET seq = new_seq, hash = new_hash, time_s = new_time_s, time_ns = new_time_ns,
           manifest = new_manifest, lock = new_lock, key = new_key
     WHERE id = 1 AND seq = at_seq AND hash = at_hash;
    IF NOT FOUND THEN
        SELECT seq INTO cur_seq FROM govledger.head WHERE id = 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'govledger: the head row is missing' USING ERRCODE = 'GL500';
        END IF;
        RAISE EXCEPTION 'govledger: the stored head is seq %, the batch extends seq %', cur_seq, at_seq
            USING ERRCODE = 'GL409';
    END IF;
END
$$;
