package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// stats are the overview's counts, kept up to date incrementally: each
// overview reads only the entries appended since the previous one (the
// first reads the whole ledger once).
type stats struct {
	mu                 sync.Mutex
	last               uint64
	kinds              map[string]uint64
	accepted, rejected uint64
	codes              map[string]uint64
	// unix minute, hour or day -> accepted, rejected; minutes are kept
	// for the last maxMinuteBuckets minutes only.
	minutes, hours, days map[int64]*[2]uint64
	first, latest        time.Time
}

var errCaughtUp = errors.New("caught up")

// update reads the entries after the last one counted, up to the head.
func (s *stats) update(ctx context.Context, b server.Backend) error {
	head, err := headSeq(ctx, b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		s.kinds, s.codes = map[string]uint64{}, map[string]uint64{}
		s.minutes, s.hours, s.days = map[int64]*[2]uint64{}, map[int64]*[2]uint64{}, map[int64]*[2]uint64{}
	}
	defer s.pruneMinutes()
	if head <= s.last {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = b.Watch(wctx, s.last, func(v server.EntryView) error {
		if v.Seq != s.last+1 {
			return fmt.Errorf("event stream skipped from entry %d to %d", s.last, v.Seq)
		}
		s.add(v)
		s.last = v.Seq
		if v.Seq >= head {
			return errCaughtUp
		}
		return nil
	})
	if errors.Is(err, errCaughtUp) {
		return nil
	}
	return err
}

// brief is the part of an entry the counts read.
type brief struct {
	Kind     string `json:"kind"`
	Decision string `json:"decision"`
	Time     string `json:"time"`
	Reasons  []struct {
		Code string `json:"code"`
	} `json:"reasons"`
}

func (s *stats) add(v server.EntryView) {
	var e brief
	if json.Unmarshal(v.Entry, &e) != nil {
		s.kinds["(malformed)"]++
		return
	}
	s.kinds[e.Kind]++
	if e.Kind != entry.KindHandoff {
		return
	}
	i := 0
	switch e.Decision {
	case reason.Accepted:
		s.accepted++
	case reason.Rejected:
		s.rejected++
		i = 1
	default:
		return
	}
	for _, r := range e.Reasons {
		s.codes[r.Code]++
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return
	}
	if s.first.IsZero() {
		s.first = t
	}
	s.latest = t
	u := t.Unix()
	for _, m := range []struct {
		m   map[int64]*[2]uint64
		key int64
	}{{s.minutes, u / 60}, {s.hours, u / 3600}, {s.days, u / 86400}} {
		c := m.m[m.key]
		if c == nil {
			c = new([2]uint64)
			m.m[m.key] = c
		}
		c[i]++
	}
}

func (s *stats) pruneMinutes() {
	if s.latest.IsZero() {
		return
	}
	last := s.latest.Unix() / 60
	for k := range s.minutes {
		if k <= last-maxMinuteBuckets {
			delete(s.minutes, k)
		}
	}
}

// headSeq returns the seq of the newest entry (0 for an empty ledger).
func headSeq(ctx context.Context, b server.Backend) (uint64, error) {
	p, err := b.Entries(ctx, server.Query{Limit: 1})
	if err != nil {
		return 0, err
	}
	if p == nil || len(p.Entries) == 0 {
		return 0, nil
	}
	return p.Entries[0].Seq, nil
}

type codeCount struct {
	Code  string
	Count uint64
}

type kindCount struct {
	Kind  string
	Count uint64
}

// summary is a copy of the counts for one page.
type summary struct {
	Entries            uint64
	Kinds              []kindCount
	Accepted, Rejected uint64
	Codes              []codeCount
	Chart              chart
}

func (s *stats) summary() summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := summary{Entries: s.last, Accepted: s.accepted, Rejected: s.rejected}
	for k, n := range s.kinds {
		out.Kinds = append(out.Kinds, kindCount{k, n})
	}
	slices.SortFunc(out.Kinds, func(a, b kindCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind)) })
	for c, n := range s.codes {
		out.Codes = append(out.Codes, codeCount{c, n})
	}
	slices.SortFunc(out.Codes, func(a, b codeCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code)) })
	out.Codes = out.Codes[:min(len(out.Codes), 10)]
	out.Chart = s.chart()
	return out
}

// chart is the accepted/rejected bar chart, laid out for an SVG template
// (numbers only; the labels are escaped text).
type chart struct {
	Width, Height int
	Bars          []bar
	Labels        []label
	Unit          string // "hour" or "day"
	Max           uint64
	Empty         bool
}

type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
}

type label struct {
	X, Y   int
	Text   string
	Anchor string
}

const (
	chartW, chartH   = 720, 220
	chartLeft        = 48
	chartTop         = 12
	chartPlotH       = 170
	maxMinuteBuckets = 120
	maxHourBuckets   = 48
	maxDayBuckets    = 60
	chartLabelBottom = chartTop + chartPlotH + 20
)

func (s *stats) chart() chart {
	c := chart{Width: chartW, Height: chartH}
	if s.first.IsZero() {
		c.Empty = true
		return c
	}
	// The finest of minutes, hours and days that spans the ledger's
	// handoffs in its bucket limit; days show the latest maxDayBuckets.
	var m map[int64]*[2]uint64
	var step, from, last int64
	var unit, layout string
	for _, b := range []struct {
		m      map[int64]*[2]uint64
		step   int64
		max    int64
		unit   string
		layout string
	}{{s.minutes, 60, maxMinuteBuckets, "minute", "Jan 2 15:04"}, {s.hours, 3600, maxHourBuckets, "hour", "Jan 2 15:04"},
		{s.days, 86400, maxDayBuckets, "day", "Jan 2"}} {
		m, step, unit, layout = b.m, b.step, b.unit, b.layout
		last, from = s.latest.Unix()/step, s.first.Unix()/step
		if last-from < b.max {
			break
		}
		from = max(from, last-b.max+1)
	}
	c.Unit = unit
	n := int(last - from + 1)
	for k := from; k <= last; k++ {
		if v := m[k]; v != nil {
			c.Max = max(c.Max, v[0]+v[1])
		}
	}
	slot := (chartW - chartLeft) / n
	w := max(1, slot*3/4)
	for i := range n {
		k := from + int64(i)
		v := m[k]
		if v == nil {
			continue
		}
		x := chartLeft + i*slot + (slot-w)/2
		ha := int(v[0] * chartPlotH / c.Max)
		hr := int(v[1] * chartPlotH / c.Max)
		when := time.Unix(k*step, 0).UTC().Format(layout)
		base := chartTop + chartPlotH
		if ha > 0 {
			c.Bars = append(c.Bars, bar{X: x, Y: base - ha, W: w, H: ha, Class: "accepted", Title: fmt.Sprintf("%s UTC: %d accepted", when, v[0])})
		}
		if hr > 0 {
			c.Bars = append(c.Bars, bar{X: x, Y: base - ha - hr, W: w, H: hr, Class: "rejected", Title: fmt.Sprintf("%s UTC: %d rejected", when, v[1])})
		}
	}
	first := time.Unix(from*step, 0).UTC().Format(layout)
	lastL := time.Unix(last*step, 0).UTC().Format(layout)
	c.Labels = []label{
		{X: chartLeft - 6, Y: chartTop + 10, Text: fmt.Sprint(c.Max), Anchor: "end"},
		{X: chartLeft - 6, Y: chartTop + chartPlotH, Text: "0", Anchor: "end"},
		{X: chartLeft, Y: chartLabelBottom, Text: first + " UTC", Anchor: "start"},
	}
	if n > 1 {
		c.Labels = append(c.Labels, label{X: chartW, Y: chartLabelBottom, Text: lastL + " UTC", Anchor: "end"})
	}
	return c
}
