package manifest_test

import (
	"fmt"

	"github.com/govledger/govledger/manifest"
)

func ExampleParse() {
	_, err := manifest.Parse("prompt-manifest.json", []byte(`{
  "manifest_version": 1,
  "agents": [
    {"agent_id": "writer", "agent_type": "domain", "agent_version": "v1.0", "prompt_path": "../writer.md",
     "handoff_to": ["editor"]}
  ]
}`), ".")
	fmt.Println(err)
	// Output:
	// prompt-manifest.json:4:52: /agents/0/agent_version: invalid agent_version: "v1.0": want MAJOR.MINOR.PATCH without a "v" prefix
	// prompt-manifest.json:4:77: /agents/0/prompt_path: invalid prompt_path: "../writer.md": ".." leaves the registry folder
	// prompt-manifest.json:5:21: /agents/0/handoff_to/0: unknown agent reference: handoff_to "editor" is not a registered agent
}
