package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/manifest"
)

// registryResult is the report of "registry": the loaded registry's
// collaboration boundaries (manifest.Registry.Matrix).
type registryResult struct {
	Schema          string `json:"schema"`
	Manifest        string `json:"manifest"`
	manifest.Matrix `json:",inline"`
}

func registryCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "registry",
		Usage: "print who may hand off to whom under the registry (--manifest), and why",
		Description: `Prints the collaboration boundaries of the registry named by --manifest (a
prompt-manifest.json or a folder of */SKILL.md skills): for every agent as a
source, the targets it may hand off to and why. Everything not listed is refused
with BOUNDARY_VIOLATION (deny by default).

Why a target is allowed:
  handoff_to      the target is in the source's handoff_to
  composition     the source is an archetype, the target one of its composition domains
  orchestrator    the source is an orchestrator: it may hand off to any agent
  eligible_skill  skills folder only: the target declares accepts_handoff: true and
                  the source declares no handoff_to (a handoff_to list only narrows)

Examples:
  govledger registry
  govledger --manifest skills/ registry
  govledger registry --output json | jq '.sources[] | select(.agent_id == "domain-05-product")'`,
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("registry takes no arguments")
			}
			if g.output != "text" && g.output != "json" {
				return usageErr("registry: --output %q: want text or json", g.output)
			}
			reg, err := loadRegistry(g)
			if err != nil {
				return err
			}
			res := &registryResult{Schema: "govledger.registry/v1", Manifest: g.manifest, Matrix: *reg.Matrix()}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			return res.writeText(g)
		},
	}
}

func (res *registryResult) writeText(g *globals) error {
	w := g.stdout
	fmt.Fprintf(w, "registry %s (%s, %d agents): %d of %d source -> target pairs allowed; every other handoff is refused (deny by default)\n\n",
		res.Manifest, res.Kind, res.Agents, res.Allowed, res.Agents*res.Agents)
	skills := res.Kind == "skills"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "SOURCE\tTYPE\tTARGET\tWHY"
	if skills {
		header += "\tCATEGORIES"
	}
	fmt.Fprintln(tw, header)
	for _, s := range res.Sources {
		src, typ := s.ID, s.Type
		if len(s.Targets) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t(none)\tdeny by default\n", src, typ)
			continue
		}
		for _, t := range s.Targets {
			why := make([]string, len(t.Grounds))
			for i, gr := range t.Grounds {
				why[i] = string(gr)
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%s", src, typ, t.ID, strings.Join(why, ", "))
			if skills {
				line += "\t" + strings.Join(t.Categories, ", ")
			}
			fmt.Fprintln(tw, line)
			src, typ = "", "" // the source is named on its first line only
		}
	}
	return tw.Flush()
}
