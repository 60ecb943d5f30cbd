// Package bundle makes and checks offline proof bundles: JSON documents that
// let someone without the ledger database check that an entry is in a
// ledger (an inclusion bundle) or that a ledger grew from one checkpoint to
// another by appending only (a consistency bundle).
//
// Inclusion bundle (schema "govledger.proof/v1"):
//
//	{
//	  "schema": "govledger.proof/v1",
//	  "origin": "<ledger origin>",
//	  "seq": 3,                      // the entry's seq
//	  "leaf_index": 2,               // seq-1
//	  "tree_size": 10,               // the checkpoint's size
//	  "entry": "<canonical entry JSON, as a string>",
//	  "entry_hash": "<hex SHA-256(0x00 || entry bytes)>",
//	  "payload_b64": "<base64 payload bytes>",   // absent when redacted or not stored
//	  "redacted": true,                          // present only when redacted
//	  "inclusion_proof": ["<hex hash>", ...],    // RFC 6962 audit path, leaf upward
//	  "checkpoint": "<signed C2SP checkpoint>"
//	}
//
// Consistency bundle (schema "govledger.consistency/v1"): origin, old_size,
// new_size, old_checkpoint, new_checkpoint (signed C2SP checkpoints) and
// consistency_proof (hex hashes, RFC 6962 / tlog.ProveTree order).
//
// Every hash in a bundle is 64 lowercase hex digits; the checkpoint's own
// root line stays base64, as C2SP specifies. The proof hash order is
// golang.org/x/mod/sumdb/tlog's, which is RFC 6962's (and
// github.com/transparency-dev/merkle's).
package bundle
