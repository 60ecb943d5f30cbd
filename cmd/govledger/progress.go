package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress returns a callback that shows progress on stderr when it is a
// terminal, and nil otherwise (pipes and CI logs stay clean).
func progress(g *globals, total uint64, what string) (func(seq uint64), func()) {
	f, ok := g.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total == 0 {
		return nil, func() {}
	}
	bar := progressbar.NewOptions64(int64(total),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)
	return func(seq uint64) { bar.Set64(int64(seq)) }, func() { bar.Finish(); io.WriteString(f, "") }
}
