// Package verify replays a govledger ledger, or an export of one, and
// reports every inconsistency it finds, naming the first bad seq.
//
// # Model
//
//   - Source is what Replay reads: entries in stored order and the blobs
//     (payload and snapshot bytes) they name. LedgerSource adapts an open
//     *ledger.Ledger; ExportSource reads the JSON Lines export format
//     (see ExportSource, WriteExport).
//   - Replay reads a Source once, in order, and returns a Report.
//   - Report lists Findings, each self-contained: the seq, a stable kind,
//     what was expected and what was found. FirstBad is the lowest seq with
//     a finding that is not a warning.
//   - Options add what only the caller has: the ledger's structural check
//     (ledger.Ledger.Check) and its stored head, and a progress callback.
//
// # What Replay checks
//
// For every entry, cheapest first: the seq follows the previous one with no
// gap; the bytes are a valid, canonical entry (entry.Decode); "prev"
// is the hash recomputed from the previous stored bytes (never a stored
// hash); time does not go backwards (a warning); the payload and snapshot
// bytes re-hash to the SHA-256 and size the entry names; a handoff names
// the manifest and lock snapshots in force; and, unless
// Options.SkipReevaluate, the decision is taken again with policy.Decide
// from the recorded payload, the snapshots in force, the entry's time and
// inputs, and the state the replay rebuilt (accepted handoff IDs, blocked
// agents), and its decision, reason codes and severities, and blocked
// agents are compared with the stored ones.
//
// When a link between two entries is broken, Replay uses the entry after
// them to place the blame: if the later entry's own link holds, its "prev"
// is authentic and the earlier entry's bytes were changed (kind "hash" at
// the earlier seq); otherwise the later entry's "prev" is reported (kind
// "prev").
//
// # What Replay cannot see
//
// A hash chain kept on the same machine detects every edit that breaks it,
// but not a truncated tail, a rolled-back file, or a suffix rewritten with
// recomputed hashes: the result is a shorter or different chain that is
// internally consistent. Detecting those needs a checkpoint (tree size and
// root hash) kept elsewhere; Report.Entries and Report.Head are what a
// caller compares with one.
//
// # Resources
//
// Replay streams, and spreads the work over the cores. The part of an
// entry's judgement that depends on no other entry (decoding it, once;
// hashing it and the blob it names; taking its decision again against a
// guess of the state: nothing accepted, nobody blocked) is done by
// runtime.GOMAXPROCS workers, handed 64 entries at a time; the rest (the
// chain links, the state fold, and whether the guess held: if not, the
// decision is taken again with the real state) is done in stored order on
// the goroutine that delivers the entries, which also adds every finding
// and calls Progress. Options.Structural (the store's own check) runs
// beside them on a goroutine of its own, and its findings are added once
// the replay is judged. The report is therefore the same, byte for byte,
// whatever the number of workers and however their work interleaves. In
// flight are at most eight batches per worker and the batch being
// gathered, with the blobs they name (about 3 MiB with two workers).
//
// Beyond those, Replay holds the parsed snapshots, the blocked agents, the
// entries whose bytes are missing, and for each accepted handoff ID: from
// a source that reads entries again (LedgerSource), one 8-byte slot of a
// 24-bit tag of its keyed digest and its seq, in shards 70-88% full (about
// 10 MiB at one million accepted handoffs; an outcome's link is judged
// from its handoff, read again); from other sources, a 64-bit keyed digest
// mapped to its seq and a 24-bit digest of its payload hash in a Go map,
// and a packed word for the outcome links (about 30 bytes an entry).
// TestReplayHeap holds both budgets. Replay never
// panics: a panic while judging an entry, or in the source, is recovered
// and reported as a finding of kind "corrupt".
package verify
