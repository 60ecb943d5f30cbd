// Package tiles is the one home of the C2SP tlog-tiles wire format
// (https://c2sp.org/tlog-tiles): the paths of the checkpoint, the hash
// tiles and the entry bundles, the number encoding of those paths
// (index 1234067 is "x001/x234/067"), which tiles a tree of a given size
// has, and the entry bundle encoding (big-endian uint16 length-prefixed
// entries). The server's tile routes, "govledger publish" and every client
// (interop tests, a monitor, a witness) call it, so the three can never
// disagree on a path.
//
// A [Tile] names one resource: a hash tile (Level 0..63) or an entry
// bundle (Entries), an Index and a Width (1..256; 256 is a full tile,
// whose path has no ".p/W" suffix). [ParsePath] is the strict inverse of
// [Tile.Path]: it refuses leading zeros, a missing "x", a width of 0 or
// 256 after ".p/", and anything else the spec does not write.
//
// [HashTile] reads a hash tile's bytes from any tlog.HashReader (a ledger
// view), [Publish] writes a ledger's tiles as static files.
//
// The package never prints, exits, or reads flags or the environment.
package tiles
