package verify

import "context"

// ReplayWorkers is Replay with the given number of workers (below 2: none,
// each entry is prepared by the goroutine that judges it). It also returns
// how many decisions were taken again in stored order because no worker's
// speculation could be used.
func ReplayWorkers(ctx context.Context, src Source, opts Options, workers int) (*Report, int, error) {
	var st replayStats
	rep, err := replay(ctx, src, opts, workers, &st)
	return rep, st.decidedAgain, err
}
