package main

import (
	"context"
	"log/slog"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ledgerbackend"
	"github.com/govledger/govledger/tiles"
)

// commitPokes returns a channel that holds a token at once and again after
// every commit (coalesced: one token stands for every commit before it
// is taken), for the loops that follow the ledger's head (publish,
// witnessing). Its watcher is counted in wg and ends with ctx.
func commitPokes(ctx context.Context, wg *sync.WaitGroup, l *ledger.Ledger, be *ledgerbackend.Backend) <-chan struct{} {
	poke := make(chan struct{}, 1)
	poke <- struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		head, _ := l.TreeSize(ctx)
		be.Watch(ctx, head, func(server.EntryView) error {
			select {
			case poke <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	return poke
}

// startPublisher publishes l into dir as a static tlog-tiles log (serve
// --publish-to): once at start, then after commits, coalesced (a publish
// covers every commit before it). With w (serve --witness-policy), it
// publishes only the checkpoints the witnesses' quorum cosigned, each time
// a new one is served. It stops when ctx ends; wait returns once the
// publish in progress, if any, is done, so the ledger can be closed.
func startPublisher(ctx context.Context, log *slog.Logger, l *ledger.Ledger, be *ledgerbackend.Backend, signer note.Signer, dir string, entries bool, w *witnessing) (wait func()) {
	var wg sync.WaitGroup
	var poke <-chan struct{}
	if w == nil {
		poke = commitPokes(ctx, &wg, l, be)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			o := tiles.PublishOptions{Signer: signer, Entries: entries}
			var wake <-chan struct{}
			if w == nil {
				select {
				case <-ctx.Done():
					return
				case <-poke:
				}
			} else {
				// Taken before the checkpoint is read: no move is missed.
				wake = w.wake()
				o.Checkpoint = w.Checkpoint()
			}
			if w == nil || o.Checkpoint != nil {
				res, err := tiles.Publish(ctx, l, dir, o)
				switch {
				case err != nil && ctx.Err() == nil:
					log.Error("publish failed; the folder keeps its last checkpoint", "dir", dir, "error", err.Error())
				case err == nil && res.Size != res.OldSize:
					log.Info("published", "dir", dir, "size", res.Size, "old_size", res.OldSize, "tiles", res.Tiles, "bundles", res.Bundles,
						"cosigned", o.Checkpoint != nil)
				}
			}
			if w != nil {
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
			}
		}
	}()
	return wg.Wait
}
