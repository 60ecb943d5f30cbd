package ui

import "fmt"

// graph is a workflow's handoff chain laid out as a sequence diagram for
// an SVG template: one lifeline per agent (in order of first appearance),
// one arrow per handoff from its source to its target, top to bottom in
// seq order. Every arrow links to its entry.
type graph struct {
	Width, Height int
	Lanes         []lane
	Edges         []edge
}

type lane struct {
	X, Y1, Y2 int
	Agent     string
	LabelY    int
}

type edge struct {
	Seq            uint64
	X1, X2, Y      int
	Head           string // the arrow head's polygon points
	LabelX, LabelY int
	Label          string
	Class          string // accepted, rejected or other
	Title          string
}

const (
	laneGap   = 180
	laneLeft  = 90
	edgeGap   = 44
	graphTop  = 40
	arrowHead = 8
)

func layoutGraph(rs []row) graph {
	var g graph
	index := map[string]int{}
	laneOf := func(agent string) int {
		if agent == "" {
			agent = "(unknown)"
		}
		i, ok := index[agent]
		if !ok {
			i = len(g.Lanes)
			index[agent] = i
			g.Lanes = append(g.Lanes, lane{X: laneLeft + i*laneGap, Agent: agent, LabelY: graphTop - 16})
		}
		return i
	}
	y := graphTop + edgeGap/2
	finished := map[uint64]string{} // handoff seq -> its outcome's status
	for _, r := range rs {
		if r.Kind == "outcome" {
			finished[r.DecisionSeq] = r.Status
		}
	}
	for _, r := range rs {
		if r.Kind != "handoff" {
			continue
		}
		s, t := laneOf(r.Source), laneOf(r.Target)
		x1, x2 := laneLeft+s*laneGap, laneLeft+t*laneGap
		e := edge{Seq: r.Seq, X1: x1, X2: x2, Y: y, Class: r.Decision, Title: fmt.Sprintf("entry %d: %s -> %s, %s", r.Seq, r.Source, r.Target, r.Decision)}
		if e.Class != "accepted" && e.Class != "rejected" {
			e.Class = "other"
		}
		if st, ok := finished[r.Seq]; ok {
			e.Title += "; the target finished: " + st
		}
		dir := 1
		if x2 < x1 {
			dir = -1
		}
		if x1 == x2 { // a handoff to itself: a short loop to the right
			e.X2 = x1 + 40
			dir = -1
		}
		e.Head = fmt.Sprintf("%d,%d %d,%d %d,%d", e.X2, y, e.X2-dir*arrowHead, y-arrowHead/2, e.X2-dir*arrowHead, y+arrowHead/2)
		e.LabelX, e.LabelY = (e.X1+e.X2)/2, y-6
		e.Label = fmt.Sprintf("#%d %s", r.Seq, r.Decision)
		g.Edges = append(g.Edges, e)
		y += edgeGap
	}
	g.Height = y + 10
	g.Width = max(laneLeft*2+(len(g.Lanes)-1)*laneGap, 360)
	for i := range g.Lanes {
		g.Lanes[i].Y1, g.Lanes[i].Y2 = graphTop, g.Height-10
	}
	return g
}
