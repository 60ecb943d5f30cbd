package postgres_test

import (
	"sync"
	"testing"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/ledgertest"
)

// TestConformanceSuite runs ledger/ledgertest against the driver through
// the ledger core (two cores racing on one database included), with
// durability across a reopen of the same database.
func TestConformanceSuite(t *testing.T) {
	var mu sync.Mutex
	dsns := map[ledger.Driver]string{}
	ledgertest.RunStore(t, ledgertest.Store{
		Open: func(t *testing.T) ledger.Driver {
			d, dsn := open(t, nil)
			mu.Lock()
			dsns[d] = dsn
			mu.Unlock()
			return d
		},
		Reopen: func(t *testing.T, d ledger.Driver) ledger.Driver {
			mu.Lock()
			dsn := dsns[d]
			mu.Unlock()
			return openDSN(t, dsn, nil)
		},
	})
}
