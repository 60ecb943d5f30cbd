package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// runes each cost 1 ("recrod" is 1 from "record").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// suggest returns the candidates closest to typed: the nearest by edit
// distance when it is small for the word's length (1 for up to 4
// letters, 2 up to 8, else 3), or the candidates typed is a prefix of
// (at least 3 letters). Nil when nothing is close: a suggestion must be
// a likely typo, not any word.
func suggest(typed string, candidates []string) []string {
	typed = strings.ToLower(typed)
	limit := 3
	switch n := len([]rune(typed)); {
	case n <= 4:
		limit = 1
	case n <= 8:
		limit = 2
	}
	best, bestD := []string(nil), limit+1
	for _, c := range candidates {
		d := editDistance(typed, strings.ToLower(c))
		switch {
		case d > limit:
		case d < bestD:
			best, bestD = []string{c}, d
		case d == bestD:
			best = append(best, c)
		}
	}
	if best == nil && len(typed) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(strings.ToLower(c), typed) {
				best = append(best, c)
			}
		}
	}
	sort.Strings(best)
	return dedupe(best)
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// didYouMean renders suggestions as `: did you mean "a" or "b"?`, or "".
// quote is false for flags (did you mean --export?).
func didYouMean(s []string, quote bool) string {
	if len(s) == 0 {
		return ""
	}
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = v
		if quote {
			q[i] = fmt.Sprintf("%q", v)
		}
	}
	return ": did you mean " + orList(q) + "?"
}

// commandNames lists the names and aliases of visible commands.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return names
}

// unknownCommand is the usage error for a word that names no command of
// cmds; parent is "" for govledger itself, else the command path.
func unknownCommand(parent, word string, cmds []*cli.Command) error {
	where, prefix := "govledger", ""
	if parent != "" {
		where, prefix = "govledger "+parent, parent+": "
	}
	hint := didYouMean(suggest(word, commandNames(cmds)), true)
	if hint == "" && parent == "" && (word == "help" || word == "version") {
		hint = didYouMean([]string{"--" + word}, false)
	}
	return usageErr("%sunknown command %q%s (see %s --help)", prefix, word, hint, where)
}

// flagSuggestion returns ": did you mean --x?" for an error of the
// flag package about an undefined flag, when one of flags is close.
func flagSuggestion(err error, flags []cli.Flag) string {
	// The flag package's only report of the name is its message.
	_, name, ok := strings.Cut(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	for _, f := range flags {
		if bf, ok := f.(*cli.BoolFlag); ok && bf.Hidden {
			continue
		}
		for _, n := range f.Names() {
			if len(n) > 1 { // long names only: a one-letter typo has no near miss
				names = append(names, n)
			}
		}
	}
	s := suggest(name, names)
	for i, v := range s {
		s[i] = "--" + v
	}
	return didYouMean(s, false)
}
