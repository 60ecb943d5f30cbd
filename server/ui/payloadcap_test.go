package ui_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// hostileFlow is a YAML flow sequence of size bytes in a swarm/2
// document: read without the parse caps, yaml.v3 spends about 400 bytes
// per byte on it.
func hostileFlow(size int) []byte {
	head := []byte("handoff:\n  source:\n    skill: perspective-swarm\n  flow: [")
	return append(append(head, bytes.Repeat([]byte("1,"), (size-len(head))/2)...), "1]\n"...)
}

// TestEntryPayloadOverCaps: the entry page of a stored payload over the
// parse caps (here of an entry recorded before rules versions, which the
// viewer still reads under the caps of rules 2) neither reads nor shows
// it: it says "payload too large to render (N bytes ...); download it",
// links the download for a principal with payload:read, and costs a few
// times the payload, not the hundreds of times an uncapped read does.
func TestEntryPayloadOverCaps(t *testing.T) {
	s := newSite(t, nil)
	doc := hostileFlow(1 << 20)
	v := s.ledger.add(handoffEntry("swarm/2", "big-1", "planner", "coder", "wf-big", pWriter, nil), doc)
	c := s.client()
	c.login(pAuditor)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	a := c.get(fmt.Sprintf("/ui/entries/%d", v.Seq))
	runtime.ReadMemStats(&m1)
	if a.status != 200 {
		t.Fatalf("entry page: %d %s", a.status, a.body)
	}
	note := fmt.Sprintf("payload too large to render (%d bytes: the document has more YAML values", len(doc))
	if !strings.Contains(a.body, note) || strings.Contains(a.body, `id="payload"`) {
		t.Errorf("entry page of a %d-byte hostile payload: want %q and no payload shown", len(doc), note)
	}
	link := fmt.Sprintf(`<a id="payload-download" href="/v1/entries/%d/payload" download>`, v.Seq)
	if !strings.Contains(a.body, link) {
		t.Errorf("no download link %q", link)
	}
	if got := c.get(fmt.Sprintf("/v1/entries/%d/payload", v.Seq)); got.status != 200 || got.body != string(doc) {
		t.Errorf("the linked download: %d, %d bytes; want the %d bytes", got.status, len(got.body), len(doc))
	}
	n := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("the entry page of a %d-byte payload over the caps allocated %d bytes", len(doc), n)
	if n > 8*uint64(len(doc))+16<<20 {
		t.Errorf("the entry page allocated %d bytes for a %d-byte payload", n, len(doc))
	}
	// Without payload:read: the same note, no link; and a payload within
	// the caps is still shown.
	r := s.client()
	r.login(pReader)
	if a := r.get(fmt.Sprintf("/ui/entries/%d", v.Seq)); !strings.Contains(a.body, note) || strings.Contains(a.body, "payload-download") {
		t.Errorf("reader: want the note without a link")
	}
	if a := c.get(fmt.Sprintf("/ui/entries/%d", s.seeded.governed)); !strings.Contains(a.body, `id="payload"`) || strings.Contains(a.body, "too large to render") {
		t.Errorf("a payload within the caps is not shown")
	}
}
