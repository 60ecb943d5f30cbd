// Package interop holds govledger's interoperability tests against outside
// implementations of the C2SP specifications it speaks: Tessera's tlog
// client (github.com/transparency-dev/tessera/client) and torchwood's tile
// client (filippo.io/torchwood) read a real "govledger serve" and a
// "govledger publish" folder, rebuild the root and check inclusion and
// consistency proofs.
//
// It is a module of its own (go.mod beside this file, replacing
// github.com/govledger/govledger with the folder above) so that the
// product's go.mod lists only what the product runs. Run it with
// "cd interop && go test ./..."; .ci/run does.
package interop
