package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/reason"
)

// completeFlag is the hidden flag the shell scripts append to ask for the
// words that may follow (urfave/cli's EnableBashCompletion protocol).
const completeFlag = "--generate-bash-completion"

// bashCompletion asks govledger itself for candidates, so it follows the
// commands and flags of the binary on PATH. Plain bash is enough; the
// bash-completion package is not needed.
const bashCompletion = `# bash completion for govledger: source <(govledger completion bash)
_govledger_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" out w
  out="$("${COMP_WORDS[@]:0:COMP_CWORD}" "$cur" ` + completeFlag + ` 2>/dev/null)"
  COMPREPLY=()
  while IFS= read -r w; do
    [[ -n "$w" && "$w" == "$cur"* ]] && COMPREPLY+=("$w")
  done <<< "$out"
}
complete -o bashdefault -o default -F _govledger_complete govledger
`

// zshCompletion does the same for zsh; with no candidate it completes
// file names (handoff documents, bundles, keys).
const zshCompletion = `#compdef govledger
# zsh completion for govledger: source <(govledger completion zsh), or save
# it as _govledger in a folder of $fpath before compinit runs.
_govledger() {
  local -a candidates
  candidates=("${(@f)$("${(@)words[1,CURRENT]}" ` + completeFlag + ` 2>/dev/null)}")
  candidates=("${(@)candidates:#}")
  if (( ${#candidates} )); then
    compadd -- "${(@)candidates}"
  else
    _files
  fi
}
if (( $+functions[compdef] )); then
  compdef _govledger govledger
fi
`

// fishCompletion does the same for fish.
const fishCompletion = `# fish completion for govledger:
#   govledger completion fish > ~/.config/fish/completions/govledger.fish
function __govledger_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l out ($words $cur ` + completeFlag + ` 2>/dev/null)
    if test (count $out) -gt 0
        printf '%s\n' $out
    else
        __fish_complete_path $cur
    end
end
complete -c govledger -f -a '(__govledger_complete)'
`

func completionCommand(g *globals) *cli.Command {
	shell := func(name, script, install string) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: "print the " + name + " completion script",
			Description: "Prints a " + name + ` script that completes govledger's commands, flags and
flag values (--output, --format, --decision, --kind) by asking govledger.

Examples:
  ` + install,
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usageErr("completion %s takes no arguments", name)
				}
				_, err := fmt.Fprint(g.stdout, script)
				return err
			},
		}
	}
	return &cli.Command{
		Name:  "completion",
		Usage: "print a shell completion script (bash, zsh or fish)",
		Description: `Prints a script that makes the shell complete govledger's commands, flags and
flag values. Load it from the shell's start-up file.

Examples:
  echo 'source <(govledger completion bash)' >> ~/.bashrc
  echo 'source <(govledger completion zsh)' >> ~/.zshrc      # after compinit
  govledger completion zsh > "${fpath[1]}/_govledger"        # or install it on $fpath
  govledger completion fish > ~/.config/fish/completions/govledger.fish`,
		Subcommands: []*cli.Command{
			shell("bash", bashCompletion, "echo 'source <(govledger completion bash)' >> ~/.bashrc"),
			shell("zsh", zshCompletion, "echo 'source <(govledger completion zsh)' >> ~/.zshrc"),
			shell("fish", fishCompletion, "govledger completion fish > ~/.config/fish/completions/govledger.fish"),
		},
		Action: func(c *cli.Context) error {
			return usageErr("completion: name a shell: bash, zsh or fish")
		},
	}
}

// flagValues are the values a flag may take, for completion. The value of
// --output depends on the command (the outputs table).
var flagValues = map[string]func(path string) []string{
	"output": outputValues,
	"o":      outputValues,
	"format": func(string) []string {
		f := make([]string, len(handoff.Formats))
		for i, v := range handoff.Formats {
			f[i] = string(v)
		}
		return f
	},
	"decision":     func(string) []string { return []string{reason.Accepted, reason.Rejected} },
	"witness-mode": func(string) []string { return []string{witnessFailOpen, witnessFailClosed} },
	"kind": func(string) []string {
		return []string{entry.KindHandoff, entry.KindSnapshot, entry.KindUnblock, entry.KindRedaction, entry.KindKeyRotation, entry.KindOutcome}
	},
}

// completer prints the candidates for the word being completed, which the
// scripts pass last before completeFlag (empty when nothing is typed yet):
// the flags it starts when it starts with "-", the values of the flag
// before it when that flag takes listed values, else the subcommands.
// Nothing printed lets the shell complete file names.
func completer(g *globals, path string, flags []cli.Flag, subs []*cli.Command) cli.BashCompleteFunc {
	return func(c *cli.Context) {
		args, _ := g.app.Metadata["args"].([]string)
		if n := len(args); n > 0 && args[n-1] == completeFlag {
			args = args[:n-1]
		}
		cur, prev := "", ""
		if n := len(args); n > 1 {
			cur = args[n-1]
			if n > 2 {
				prev = args[n-2]
			}
		}
		// "govledger verify<TAB>" runs verify's completer with the
		// command's own name as the word: complete it to itself.
		if name := path[strings.LastIndex(path, " ")+1:]; path != "" && cur == name &&
			slices.Index(args[1:], name) == len(args)-2 {
			fmt.Fprintln(g.stdout, cur)
			return
		}
		if strings.HasPrefix(cur, "-") {
			for _, f := range flags {
				if bf, ok := f.(*cli.BoolFlag); ok && bf.Hidden {
					continue
				}
				for _, n := range f.Names() {
					dashes := "--"
					if len(n) == 1 {
						dashes = "-"
					}
					if strings.HasPrefix(dashes+n, cur) {
						fmt.Fprintln(g.stdout, dashes+n)
					}
				}
			}
			return
		}
		if name := strings.TrimLeft(prev, "-"); strings.HasPrefix(prev, "-") {
			if values, ok := flagValues[name]; ok && hasFlag(flags, name) {
				for _, v := range values(path) {
					if strings.HasPrefix(v, cur) {
						fmt.Fprintln(g.stdout, v)
					}
				}
				return
			}
		}
		for _, n := range commandNames(subs) {
			if strings.HasPrefix(n, cur) {
				fmt.Fprintln(g.stdout, n)
			}
		}
	}
}

// outputValues completes --output: the command's formats, or before the
// command (govledger --output …) every format some command writes.
func outputValues(path string) []string {
	if path != "" {
		return outputsOf(path)
	}
	var all []string
	for _, p := range slices.Sorted(maps.Keys(outputs)) {
		for _, f := range outputs[p] {
			if !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
	}
	return all
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}
