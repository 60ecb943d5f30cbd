package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkSubmit measures the HTTP layer's cost per POST /v1/handoffs over
// loopback (keep-alive connections) on the in-memory fake backend: the
// ceiling the server puts above the ledger.
func BenchmarkSubmit(b *testing.B) {
	h := start(b, nil)
	tok := "Bearer " + h.tokens[pWriterA]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.SetBytes(int64(len(docAB)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, _ := http.NewRequest("POST", h.url+"/v1/handoffs", strings.NewReader(docAB))
			r.Header.Set("Authorization", tok)
			res, err := client.Do(r)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 201 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
