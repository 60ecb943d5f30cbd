//go:build unix

package main

import "syscall"

// fdConnLimit returns the most connections "serve" may hold open within
// the process's file descriptor limit (leaving room for the ledger, the
// log and the listener), or 0 when it is unknown.
func fdConnLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 || rl.Cur > 1<<30 {
		return 0
	}
	return max(int(rl.Cur)-128, 16)
}
