package main

import (
	"strings"
	"testing"
)

const chartYAML = "name: c\nversion: 0.1.0\nappVersion: \"1\"\nhome: https://example.org/c\n"

// A value without a description of its own or of an enclosing key fails
// the generator (and so helm-check); one under a described parent inherits.
func TestRenderRefusesUndocumentedValues(t *testing.T) {
	for _, tc := range []struct {
		name, values, err string
	}{
		{"documented", "# The replicas.\nreplicas: 2\n# The image.\nimage:\n  repository: x\n  tag: \"\"\n", ""},
		{"leaf", "# The replicas.\nreplicas: 2\nnameOverride: \"\"\n", "nameOverride"},
		{"nested", "image:\n  # The repository.\n  repository: x\n  tag: \"\"\n", "image.tag"},
		{"empty map", "# Labels.\nlabels: {}\nannotations: {}\n", "annotations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := render([]byte(chartYAML), []byte(tc.values))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.err != "" && err == nil:
				t.Fatalf("render accepted an undocumented value:\n%s", doc)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Fatalf("render: %v, want it to name %s", err, tc.err)
			}
		})
	}
}
