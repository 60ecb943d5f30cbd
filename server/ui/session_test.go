package ui_test

import (
	"net/http"
	"testing"

	"github.com/govledger/govledger/server/ui"
)

// TestSessionShares: one principal logging in again and again ends only
// its own oldest sessions (its cap), never another principal's; when the
// table of all sessions is full, a login ends the oldest session of the
// principal holding the most.
func TestSessionShares(t *testing.T) {
	s := newSite(t, func(c *ui.Config) { c.MaxSessions, c.MaxSessionsPerPrincipal = 6, 3 })
	loggedIn := func(c *client) bool {
		t.Helper()
		return c.get("/ui/").status == http.StatusOK
	}
	auditor := s.client()
	auditor.login(pAuditor)
	operator := s.client()
	operator.login(pOperator)
	// The reader floods logins: only its own oldest sessions end.
	var flood []*client
	for range 20 {
		c := s.client()
		c.login(pReader)
		flood = append(flood, c)
	}
	if !loggedIn(auditor) || !loggedIn(operator) {
		t.Fatal("a flood of one principal's logins ended another principal's session")
	}
	for i, c := range flood {
		if want := i >= len(flood)-3; loggedIn(c) != want {
			t.Fatalf("reader session %d of %d logged in: %v, want %v (the newest 3)", i, len(flood), !want, want)
		}
	}
	// Table: auditor 1, operator 1, reader 3 (5 of 6). A second auditor
	// login fills it; a third takes from the biggest holder, the reader
	// (3 against the auditor's 3 counting the new one: the holder first).
	a2, a3 := s.client(), s.client()
	a2.login(pAuditor)
	a3.login(pAuditor)
	if !loggedIn(auditor) || !loggedIn(a2) || !loggedIn(a3) || !loggedIn(operator) {
		t.Fatal("a login into a full table ended the session of a principal holding fewer than the biggest holder")
	}
	if loggedIn(flood[len(flood)-3]) || !loggedIn(flood[len(flood)-2]) || !loggedIn(flood[len(flood)-1]) {
		t.Fatal("a login into a full table did not end the biggest holder's oldest session")
	}
	// Now the auditor holds the most (3): an operator login ends the
	// auditor's oldest, and nobody else's.
	o2 := s.client()
	o2.login(pOperator)
	if loggedIn(auditor) || !loggedIn(a2) || !loggedIn(a3) || !loggedIn(operator) || !loggedIn(o2) ||
		!loggedIn(flood[len(flood)-2]) || !loggedIn(flood[len(flood)-1]) {
		t.Fatal("the operator's login into a full table did not end exactly the auditor's oldest session")
	}
}
