package verify

import "context"

// ReplayWorkers is Replay with the given number of workers (below 2: none,
// each entry is prepared by the goroutine that judges it), handed batch
// entries at a time. It also returns how many decisions were taken again
// in stored order because no worker's speculation could be used.
func ReplayWorkers(ctx context.Context, src Source, opts Options, workers, batch int) (*Report, int, error) {
	var st replayStats
	rep, err := replay(ctx, src, opts, pool{workers, batch}, &st)
	return rep, st.decidedAgain, err
}
