package memory_test

import (
	"testing"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/ledgertest"
	"github.com/govledger/govledger/ledger/memory"
)

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Driver {
		d, err := memory.New("test.example/memory")
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
