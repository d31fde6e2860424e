package cli

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// krewFile is an entry of a krew platform's files: list.
type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// The krew manifest template (hack/krew/flightfeed.yaml), rendered as
// krew-release-bot renders it (Go templates, TagName, addURIAndSha): it is
// a valid krew Plugin, it names one archive per platform `make
// plugin-dist` builds (PLUGIN_PLATFORMS in the Makefile), each archive by
// the name the Makefile gives it and the binary inside it, and the
// commands its description names are the plugin's.
func TestKrewManifestMatchesThePluginDist(t *testing.T) {
	src, err := os.ReadFile("../../hack/krew/flightfeed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v9.8.7"
	funcs := template.FuncMap{"addURIAndSha": func(uri, _ string) string {
		return fmt.Sprintf("uri: %s\n    sha256: %x", uri, sha256.Sum256([]byte(uri)))
	}}
	// krew-release-bot renders the uri's own {{ .TagName }} first (a
	// template inside a template argument).
	text := strings.ReplaceAll(string(src), `/{{ .TagName }}/`, "/"+tag+"/")
	tmpl, err := template.New("krew").Funcs(funcs).Parse(text)
	if err != nil {
		t.Fatalf("hack/krew/flightfeed.yaml is not a valid template: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatalf("render hack/krew/flightfeed.yaml: %v", err)
	}
	var plugin struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string     `json:"uri"`
				Sha256 string     `json:"sha256"`
				Bin    string     `json:"bin"`
				Files  []krewFile `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(out.Bytes(), &plugin); err != nil {
		t.Fatalf("the rendered manifest is not a krew Plugin: %v\n%s", err, out.String())
	}
	if plugin.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || plugin.Kind != "Plugin" ||
		plugin.Metadata.Name != "flightfeed" || plugin.Spec.Version != tag || plugin.Spec.ShortDescription == "" {
		t.Errorf("manifest header: %s %s %q version %q", plugin.APIVersion, plugin.Kind, plugin.Metadata.Name, plugin.Spec.Version)
	}

	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PLUGIN_PLATFORMS \?= (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no PLUGIN_PLATFORMS")
	}
	want := strings.Fields(string(m[1]))
	var got []string
	for _, p := range plugin.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		got = append(got, os+"/"+arch)
		archive := fmt.Sprintf("https://github.com/flightfeed/flightfeed/releases/download/%s/kubectl-flightfeed_%s_%s.tar.gz", tag, os, arch)
		if p.URI != archive {
			t.Errorf("%s/%s: uri %q, want the archive make plugin-dist builds, %q", os, arch, p.URI, archive)
		}
		bin := "kubectl-flightfeed"
		if os == "windows" {
			bin += ".exe"
		}
		if p.Bin != bin {
			t.Errorf("%s/%s: bin %q, want %q (the file in the archive)", os, arch, p.Bin, bin)
		}
		// krew installs only what files: names; the bin must be among
		// them (hack/release holds the list to the archive's files).
		if !slices.Contains(p.Files, krewFile{From: bin, To: "."}) {
			t.Errorf("%s/%s: files: does not install %s", os, arch, bin)
		}
		if len(p.Sha256) != 64 {
			t.Errorf("%s/%s: no sha256", os, arch)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("manifest platforms %v, make plugin-dist builds %v", got, want)
	}

	// The description names commands by their words in parentheses.
	names := map[string]bool{}
	for _, c := range newPluginCommand().Commands() {
		names[c.Name()] = true
		for _, sub := range c.Commands() {
			names[c.Name()+" "+sub.Name()] = true
		}
	}
	for _, m := range regexp.MustCompile(`\(([a-z ]+)\)`).FindAllStringSubmatch(plugin.Spec.Description, -1) {
		if !names[m[1]] {
			t.Errorf("the manifest's description names (%s), which the plugin has no command for", m[1])
		}
	}
}
