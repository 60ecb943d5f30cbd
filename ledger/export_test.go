package ledger

// SetAfterCommit installs a hook run after each successful commit; its
// error is treated as a failed commit whose bytes are durable (C5).
func SetAfterCommit(l *Ledger, fn func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.afterCommit = fn
}
