// Package lockfile reads and writes prompt-lock.json, hashes prompt files
// and detects drift between an agent registry and its lock (the CI gate).
//
// The types:
//
//   - Lock, Entry: the lock file; Parse reads it strictly, Marshal writes
//     its one canonical form (lock_version first, agents sorted, two-space
//     indent, final newline), so Marshal(Parse(x)) is a fixed point.
//   - Generate: the lock of a registry, hashing each prompt file's raw bytes.
//   - Check, Report, Finding, Class: every drift (CHANGED, MISSING_FILE,
//     UNLOCKED, STALE_ENTRY, VERSION_DRIFT); Diagnose names cosmetic-only
//     changes (line endings, BOM, trailing white space) without ever
//     passing them.
//   - ParseDigest, FormatDigest: the two spellings of a prompt hash that
//     handoffs carry (bare hex, "sha256:" tagged), compared as bytes.
//   - Dir, DirOpener: read prompt files through an os.Root, so no symbolic
//     link leads outside the registry folder; WriteFile: atomic, durable
//     replacement of the lock file.
//
// The prompt hash is SHA-256 of the file's exact bytes, read once: the
// buffer that is hashed is the buffer that is diagnosed. Prompt files are
// read through an injected opener, so tests and embedders choose the file
// system.
package lockfile
