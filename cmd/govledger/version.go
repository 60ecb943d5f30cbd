package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionResult is what "govledger --version" prints: the module version
// and, when the binary was built from a checkout, the VCS revision.
type versionResult struct {
	Schema    string `json:"schema"`
	Module    string `json:"module"`
	Version   string `json:"version"`                // "v1.2.0" from go install …@v1.2.0; "(devel)" or a pseudo-version from a checkout
	Revision  string `json:"revision,omitzero"`      // vcs.revision
	Time      string `json:"revision_time,omitzero"` // vcs.time
	Modified  bool   `json:"modified,omitzero"`      // vcs.modified: uncommitted changes were built
	GoVersion string `json:"go"`
}

// buildVersion describes the running binary.
func buildVersion() versionResult { return versionOf(debug.ReadBuildInfo()) }

// versionOf describes a binary from its build information (ok false: none).
// go install …@v1.2.0 records the module version; go build in a checkout
// records "(devel)" or a pseudo-version, and the revision (vcs.revision,
// vcs.time, vcs.modified) unless built with -buildvcs=false; go run
// records neither.
func versionOf(bi *debug.BuildInfo, ok bool) versionResult {
	v := versionResult{Schema: "govledger.version/v1", Module: "github.com/govledger/govledger", Version: "(unknown)", GoVersion: runtime.Version()}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// renderVersion writes the one-line text form:
//
//	govledger v1.2.0 (github.com/govledger/govledger, go1.26.0)
//	govledger (devel) revision 3f2a… 2026-11-02T10:00:00Z, modified (…)
func renderVersion(w io.Writer, v versionResult) error {
	line := "govledger " + v.Version
	if v.Revision != "" {
		line += " revision " + v.Revision
		if v.Time != "" {
			line += " " + v.Time
		}
		if v.Modified {
			line += ", modified"
		}
	}
	_, err := fmt.Fprintf(w, "%s (%s, %s)\n", line, v.Module, v.GoVersion)
	return err
}
